// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel objects that hold the BPF backend's probes: a perf-event
 * uprobe per function, or one uprobe_multi link per file and direction
 * (Linux 6.6), each pinned under the target's links directory, so that it
 * lives as long as the session and goes when its pin is removed: an
 * entry link as <n>, the return link of the same probes as <n>r.  The
 * module registers uprobe consumers instead (kmod/bft_probe.c).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

#define BFT_F_UPROBE_MULTI_RETURN	1U
/*
 * The uprobe PMU's format/ref_ctr_offset says "config:32-63" since the
 * semaphores came (Linux 4.20); libbpf hardcodes it the same way.
 */
#define BFT_UPROBE_REF_CTR_SHIFT	32

static int uprobe_pmu_read(int *type, int *ret_bit)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");

	if (!f)
		return -errno;
	if (fscanf(f, "%d", type) != 1) {
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	*ret_bit = 0;
	f = fopen("/sys/bus/event_source/devices/uprobe/format/retprobe", "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			sscanf(buf, "config:%d", ret_bit);
		fclose(f);
	}
	return 0;
}

int bft_bpf_link_uprobe(int prog_fd, uint32_t tgid, const char *path,
			uint64_t offset, uint64_t ref_ctr, bool ret,
			uint64_t cookie)
{
	struct perf_event_attr pa;
	int type, ret_bit, pfd, lfd, err;
	LIBBPF_OPTS(bpf_link_create_opts, lo, .perf_event.bpf_cookie = cookie);

	err = uprobe_pmu_read(&type, &ret_bit);
	if (err)
		return err;
	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = type;
	pa.config = ret ? 1ULL << ret_bit : 0;
	pa.config |= ref_ctr << BFT_UPROBE_REF_CTR_SHIFT;
	pa.config1 = (uint64_t)(uintptr_t)path;
	pa.config2 = offset;
	pfd = syscall(SYS_perf_event_open, &pa, (pid_t)tgid, -1, -1,
		      PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return -errno;
	lfd = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, &lo);
	err = lfd < 0 ? -errno : 0;
	close(pfd);
	return err ? err : lfd;
}

/* The link_create part of union bpf_attr for uprobe_multi (Linux 6.6). */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

int bft_bpf_link_multi(int prog_fd, uint32_t tgid, const char *path,
		       const uint64_t *offsets, const uint64_t *cookies,
		       uint32_t cnt, bool ret)
{
	return bft_bpf_link_multi_ref(prog_fd, tgid, path, offsets, NULL,
				      cookies, cnt, ret);
}

int bft_bpf_link_multi_ref(int prog_fd, uint32_t tgid, const char *path,
			   const uint64_t *offsets, const uint64_t *ref_ctrs,
			   const uint64_t *cookies, uint32_t cnt, bool ret)
{
	struct uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = BFT_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.multi_flags = ret ? BFT_F_UPROBE_MULTI_RETURN : 0;
	a.pid = tgid;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

static void ret_path(char *buf, size_t len, uint32_t tgid, unsigned int seq)
{
	snprintf(buf, len, "%s/links/%u/%ur", bft_bpf_pin_dir(), tgid, seq);
}

int bft_bpf_link_pin(struct bft_bpf *b, int fd, uint32_t tgid,
		     unsigned int *seq)
{
	char p[PATH_MAX], r[PATH_MAX];
	int err;

	/* a return link left alone (a release cut short) keeps its number */
	for (;; (*seq)++) {
		snprintf(p, sizeof(p), "%s/links/%u/%u", bft_bpf_pin_dir(),
			 tgid, *seq);
		ret_path(r, sizeof(r), tgid, *seq);
		if (access(p, F_OK) && access(r, F_OK))
			break;
	}
	err = bpf_obj_pin(fd, p) ? -errno : 0;
	close(fd);
	if (err)
		return bft_bpf_err_set(b, err, "pinning %s: %s", p,
				       strerror(-err));
	(*seq)++;
	return 0;
}

int bft_bpf_link_pin_ret(struct bft_bpf *b, int fd, uint32_t tgid,
			 unsigned int seq)
{
	char p[PATH_MAX];
	int err;

	ret_path(p, sizeof(p), tgid, seq);
	err = bpf_obj_pin(fd, p) ? -errno : 0;
	close(fd);
	if (err)
		return bft_bpf_err_set(b, err, "pinning %s: %s", p,
				       strerror(-err));
	return 0;
}

/*
 * bpffs drops a pin's reference from an RCU callback after the unlink,
 * and the last reference frees the link from a work item: neither the
 * unlink nor the close of our descriptor waits for it.  A spec slot may
 * be freed, or the survivors of a shared link attached again without a
 * hit recorded twice, only once the link is gone, so wait (up to a
 * second) until its id no longer opens.  What is left is the work item's
 * own latency between the last reference and the unregistration.
 */
static void link_release(const char *p)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info), id = 0;
	int fd = bpf_obj_get(p);

	memset(&info, 0, sizeof(info));
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
		id = info.id;
	unlink(p);
	if (fd >= 0)
		close(fd);
	for (int i = 0; id && i < 1000; i++) {
		int f = bpf_link_get_fd_by_id(id);

		if (f < 0)
			break;
		close(f);
		usleep(1000);
	}
}

void bft_bpf_link_release(uint32_t tgid, unsigned int seq)
{
	char p[PATH_MAX];

	ret_path(p, sizeof(p), tgid, seq);
	link_release(p);	/* the returns first: no exit without entry */
	snprintf(p, sizeof(p), "%s/links/%u/%u", bft_bpf_pin_dir(), tgid, seq);
	link_release(p);
}
