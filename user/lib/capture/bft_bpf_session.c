// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's session (bft_bpf.h): whether this machine can run it,
 * loading the programs and pinning them with their maps, a handle on the
 * pins, the lock that serialises the commands that change the session, and,
 * in reverse, closing the handle and unloading.  What the module's
 * bft_main.c and bft_session.c do for a loaded module.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bft_bpf_internal.h"
#include "capture/bft_bpffs.h"
#include "bft.skel.h"

/*
 * A pin is renamed when what it holds changes in a way another version
 * would misread: that version then finds a pin missing and refuses the
 * session (ESTALE, pins_open()).  prog_ctl_cpu: bft_ctl takes the CPU to
 * work on as args[2].  An older program ignores it and works on the CPU it
 * runs on: for an offline CPU, served from this one, it would seal and
 * mark this CPU's ring (a second stop BREAK there) instead.  cpus_tbits:
 * the per-CPU state grew the time bits and their counts; an older binary
 * would read it into a buffer sized for its own layout, which
 * pins_check_layout() cannot stop.  usdt and prog_usdt came with the USDT
 * probes: a session without them could not attach one.  methods_link:
 * a method names the link that holds it (for a detach of some probes);
 * an older binary would read the records at the wrong offsets.
 */
static const char *const pin_names[] = {
	"ctl", "cpus_tbits", "rings", "hits", "hits_far", "methods_link", "read",
	"prog_enter", "prog_exit", "prog_ctl_cpu", "usdt", "prog_usdt",
};

#define NR_PINS (sizeof(pin_names) / sizeof(pin_names[0]))

static int *pin_fd(struct bft_bpf *b, size_t i)
{
	int *fds[] = {
		&b->ctl_fd, &b->cpus_fd, &b->rings_fd, &b->hits_fd,
		&b->hits_far_fd, &b->methods_fd, &b->read_fd, &b->enter_fd, &b->exit_fd,
		&b->prog_ctl_fd, &b->usdt_fd, &b->usdt_prog_fd,
	};

	return fds[i];
}

int bft_bpf_err_set(struct bft_bpf *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *bft_bpf_errmsg(const struct bft_bpf *b)
{
	return b->err;
}

const char *bft_bpf_notice(const struct bft_bpf *b)
{
	return b->notice;
}

const char *bft_bpf_pin_dir(void)
{
	const char *d = getenv("BFT_BPF_PIN_DIR");

	return d && *d ? d : BFT_BPF_PIN_DIR;
}

void bft_bpf_pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", bft_bpf_pin_dir(), name);
}

static unsigned int cpus_possible(void)
{
	int n = libbpf_num_possible_cpus();

	return n > 0 ? (unsigned int)n : 1;
}

static bool caps_suffice(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = { 0 };
	uint64_t eff;

	if (syscall(SYS_capget, &h, d))
		return false;
	eff = d[0].effective | ((uint64_t)d[1].effective << 32);
	if (eff & (1ULL << CAP_SYS_ADMIN))
		return true;
	/* CAP_PERFMON 38, CAP_BPF 39: newer than some headers */
	return (eff & (1ULL << 38)) && (eff & (1ULL << 39));
}

static bool kernel_at_least(unsigned int maj, unsigned int min)
{
	struct utsname u;
	unsigned int a = 0, c = 0;

	if (uname(&u) || sscanf(u.release, "%u.%u", &a, &c) != 2)
		return false;
	return a > maj || (a == maj && c >= min);
}

int bft_bpf_probe(char *err, size_t errlen)
{
	union bpf_attr attr;
	const char *dir = bft_bpf_pin_dir();
	char parent[PATH_MAX];

	/* a command no kernel has: only a kernel without bpf() says ENOSYS */
	memset(&attr, 0, sizeof(attr));
	if (syscall(SYS_bpf, -1, &attr, sizeof(attr)) < 0 && errno == ENOSYS) {
		snprintf(err, errlen, "this kernel has no bpf() system call "
			 "(CONFIG_BPF_SYSCALL is off): the BPF backend cannot run");
		return -ENOSYS;
	}
	if (!caps_suffice()) {
		snprintf(err, errlen, "the BPF backend needs CAP_BPF and "
			 "CAP_PERFMON (or CAP_SYS_ADMIN): run as root");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen, "this kernel has no BTF "
			 "(/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF): the "
			 "BPF backend needs it to read the uprobe depth");
		return -ENOTSUP;
	}
	if (!kernel_at_least(5, 15)) {
		snprintf(err, errlen, "kernel too old for the BPF backend: it "
			 "needs 5.15 or later (attach cookies on uprobes)");
		return -EOPNOTSUPP;
	}
	bft_bpffs_parent(dir, parent, sizeof(parent));
	return bft_bpffs_check(parent, err, errlen);
}

bool bft_bpf_loaded(void)
{
	char p[PATH_MAX];

	bft_bpf_pin_path(p, sizeof(p), "ctl");
	return access(p, F_OK) == 0;
}

/* Whether a session made now would attach with uprobe_multi links. */
static bool multi_wanted(void)
{
	const char *env = getenv("BFT_BPF_UPROBE_MULTI");

	if (env && *env)
		return strcmp(env, "0") != 0;
	return kernel_at_least(6, 6);
}

bool bft_bpf_multi(const struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;
	uint32_t zero = 0;

	if (b->ctl_fd < 0)
		return multi_wanted();
	if (bpf_map_lookup_elem(b->ctl_fd, &zero, &ctl))
		return false;
	return ctl.flags & BFT_BPF_F_MULTI;
}

int bft_bpf_ctl_read(struct bft_bpf *b, struct bft_bpf_ctl *ctl)
{
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(b->ctl_fd, &zero, ctl))
		return bft_bpf_err_set(b, -errno, "reading the control map: %s",
				       strerror(errno));
	return 0;
}

int bft_bpf_ctl_write(struct bft_bpf *b, const struct bft_bpf_ctl *ctl)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(b->ctl_fd, &zero, ctl, BPF_ANY))
		return bft_bpf_err_set(b, -errno, "writing the control map: %s",
				       strerror(errno));
	return 0;
}

/* The control map of a new session: what status and options show
 * before there is one. */
void bft_bpf_ctl_default(struct bft_bpf_ctl *ctl)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->mode = BFT_MODE_INITIALIZING;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++)
		if (bft_bpf_opt_supported(id))
			ctl->opts[id] = bft_opt_rule(id)->def;
	ctl->time_res_ns = ctl->opts[BFT_OPT_TIME_RES_NS];
	ctl->watermark = bft_watermark(ctl->opts[BFT_OPT_WATERMARK],
				       ctl->opts[BFT_OPT_BUF_SIZE]);
	ctl->flags = multi_wanted() ? BFT_BPF_F_MULTI : 0;
}

/* The control map, or a new session's when there is none yet. */
int bft_bpf_ctl_read_or_default(struct bft_bpf *b, struct bft_bpf_ctl *ctl)
{
	int err = bft_bpf_session_open(b, false);

	if (err == -ENOENT) {
		bft_bpf_ctl_default(ctl);
		return 0;
	}
	return err ? err : bft_bpf_ctl_read(b, ctl);
}

/* A fresh ring buffer of size bytes into every CPU's slot. */
int bft_bpf_ringbufs_make(struct bft_bpf *b, uint32_t size)
{
	for (uint32_t cpu = 0; cpu < b->nr_cpus; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bft_ring", 0, 0,
					size, NULL);
		int err;

		if (fd < 0)
			return bft_bpf_err_set(b, -errno, "creating the ring "
					       "of CPU %u: %s", cpu,
					       strerror(errno));
		err = bpf_map_update_elem(b->rings_fd, &cpu, &fd, BPF_ANY);
		err = err ? -errno : 0;
		close(fd);
		if (err)
			return bft_bpf_err_set(b, err, "installing the ring "
					       "of CPU %u: %s", cpu,
					       strerror(-err));
	}
	return 0;
}

/* Every CPU's writer state as the module's rings start: a SYNC owed. */
int bft_bpf_cpus_reset(struct bft_bpf *b, uint32_t res)
{
	size_t sz = BFT_BPF_CPU_STRIDE;
	char *vals = calloc(b->nr_cpus, sz);
	uint32_t zero = 0;
	int err = 0;

	if (!vals)
		return -ENOMEM;
	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++) {
		struct bft_bpf_cpu *c = (void *)(vals + cpu * sz);

		c->need_sync = 1;
		c->res = res;
		c->tbits = BFT_TIME_BITS;
	}
	if (bpf_map_update_elem(b->cpus_fd, &zero, vals, BPF_ANY))
		err = bft_bpf_err_set(b, -errno, "initialising the CPU state: "
				      "%s", strerror(errno));
	free(vals);
	return err;
}

static int session_load(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;
	struct bft_bpf_skel *skel;
	char p[PATH_MAX];
	int err, inner = -1;
	bool multi;

	bft_bpf_ctl_default(&ctl);
	multi = ctl.flags & BFT_BPF_F_MULTI;

	skel = bft_bpf_skel__open();
	if (!skel)
		return bft_bpf_err_set(b, -errno, "opening the BPF object: %s",
				       strerror(errno));
	bpf_map__set_max_entries(skel->maps.bft_rings, b->nr_cpus);
	bpf_map__set_max_entries(skel->maps.bft_read, b->nr_cpus);
	/* the template of the per-CPU rings: their size */
	inner = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bft_ring", 0, 0,
			       ctl.opts[BFT_OPT_BUF_SIZE], NULL);
	if (inner < 0 || bpf_map__set_inner_map_fd(skel->maps.bft_rings, inner)) {
		err = bft_bpf_err_set(b, -errno, "creating a ring buffer: %s",
				      strerror(errno));
		goto out;
	}
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.bft_enter,
						      BFT_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.bft_exit,
						      BFT_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.bft_usdt_hit,
						      BFT_TRACE_UPROBE_MULTI);
	}
	err = bft_bpf_skel__load(skel);
	if (err) {
		bft_bpf_err_set(b, err, "loading the BPF programs: %s (the "
				"verifier's log is on stderr)", strerror(-err));
		goto out;
	}
	b->ctl_fd = bpf_map__fd(skel->maps.bft_ctl_map);
	b->cpus_fd = bpf_map__fd(skel->maps.bft_cpus);
	b->rings_fd = bpf_map__fd(skel->maps.bft_rings);
	err = bft_bpf_ctl_write(b, &ctl);
	if (!err)
		err = bft_bpf_cpus_reset(b, ctl.time_res_ns);
	if (!err)
		err = bft_bpf_ringbufs_make(b, ctl.opts[BFT_OPT_BUF_SIZE]);
	if (err)
		goto out;
	if (mkdir(bft_bpf_pin_dir(), 0700) && errno != EEXIST) {
		err = bft_bpf_err_set(b, -errno, "mkdir %s: %s",
				      bft_bpf_pin_dir(), strerror(errno));
		goto out;
	}
	{
		int fds[NR_PINS] = {
			bpf_map__fd(skel->maps.bft_ctl_map),
			bpf_map__fd(skel->maps.bft_cpus),
			bpf_map__fd(skel->maps.bft_rings),
			bpf_map__fd(skel->maps.bft_hits),
			bpf_map__fd(skel->maps.bft_hits_far),
			bpf_map__fd(skel->maps.bft_methods),
			bpf_map__fd(skel->maps.bft_read),
			bpf_program__fd(skel->progs.bft_enter),
			bpf_program__fd(skel->progs.bft_exit),
			bpf_program__fd(skel->progs.bft_ctl),
			bpf_map__fd(skel->maps.bft_usdt),
			bpf_program__fd(skel->progs.bft_usdt_hit),
		};

		/* "ctl" last: its presence means a complete session */
		for (size_t i = NR_PINS; i-- > 0;) {
			bft_bpf_pin_path(p, sizeof(p), pin_names[i]);
			if (bpf_obj_pin(fds[i], p)) {
				err = bft_bpf_err_set(b, -errno, "pinning %s: "
						      "%s", p, strerror(errno));
				goto out;
			}
		}
	}
	bft_bpf_pin_path(p, sizeof(p), "links");
	if (mkdir(p, 0700) && errno != EEXIST)
		err = bft_bpf_err_set(b, -errno, "mkdir %s: %s", p,
				      strerror(errno));
out:
	if (inner >= 0)
		close(inner);
	bft_bpf_skel__destroy(skel);
	b->ctl_fd = b->cpus_fd = b->rings_fd = -1;
	return err;
}

/*
 * Two tools started at once (a collector and bfctl) must not both load:
 * the second would find the first one's pins.  They serialise on the
 * parent of the pin directory, and the second sees the session made.
 */
static int session_create(struct bft_bpf *b)
{
	char parent[PATH_MAX];
	bool mounted;
	int fd, err = 0;

	bft_bpffs_parent(bft_bpf_pin_dir(), parent, sizeof(parent));
	err = bft_bpffs_mount(parent, &mounted, b->err, sizeof(b->err));
	if (err)
		return err;
	if (mounted)
		snprintf(b->notice, sizeof(b->notice), "mounted a BPF "
			 "filesystem on %s, where none was, for the session's "
			 "pins", parent);
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return bft_bpf_err_set(b, -errno, "%s: %s", parent,
				       strerror(errno));
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	if (!bft_bpf_loaded())
		err = session_load(b);
	close(fd);
	return err;
}

/*
 * A version whose per-CPU state has another layout would be read, and
 * written, at the wrong offsets: refuse its session as one without a pin
 * of ours.
 */
static int pins_check_layout(struct bft_bpf *b)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(b->cpus_fd, &info, &len))
		return bft_bpf_err_set(b, -errno, "reading the BPF session's "
				       "per-CPU state: %s", strerror(errno));
	if (info.value_size != sizeof(struct bft_bpf_cpu))
		return bft_bpf_err_set(b, -ESTALE, "the BPF session in %s "
				       "keeps its per-CPU state in another "
				       "layout (%u bytes, not %zu): another "
				       "version of bftrace made it; remove "
				       "that directory to end it",
				       bft_bpf_pin_dir(), info.value_size,
				       sizeof(struct bft_bpf_cpu));
	return 0;
}

static int pins_open(struct bft_bpf *b)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < NR_PINS; i++) {
		bft_bpf_pin_path(p, sizeof(p), pin_names[i]);
		*pin_fd(b, i) = bpf_obj_get(p);
		if (*pin_fd(b, i) < 0) {
			int err = -errno;

			/*
			 * "ctl" was there, and still is (an unload removes
			 * it first): not ENOENT, which every caller takes
			 * for "no session yet" and goes on without one
			 */
			if (err == -ENOENT && i && bft_bpf_loaded())
				return bft_bpf_err_set(b, -ESTALE, "the BPF "
						       "session in %s has no "
						       "%s: another version "
						       "of bftrace made it; "
						       "remove that directory "
						       "to end it",
						       bft_bpf_pin_dir(),
						       pin_names[i]);
			if (err == -ENOENT)
				return bft_bpf_err_set(b, err, "no BPF "
						       "session (%s is "
						       "missing): attach or "
						       "start one first", p);
			return bft_bpf_err_set(b, err, "opening %s: %s", p,
					       strerror(-err));
		}
	}
	return pins_check_layout(b);
}

static void pins_close(struct bft_bpf *b)
{
	for (size_t i = 0; i < NR_PINS; i++) {
		if (*pin_fd(b, i) >= 0)
			close(*pin_fd(b, i));
		*pin_fd(b, i) = -1;
	}
}

/*
 * The pins, opened by the first call that needs them; with create, the
 * session is made if there is none, and only then: asking (status, caps,
 * options) leaves the BPF filesystem as it was.  A session whose owner
 * died is ended before anything else sees it.
 */
int bft_bpf_session_open(struct bft_bpf *b, bool create)
{
	int err = 0;

	if (b->ctl_fd >= 0)
		return 0;
	if (!bft_bpf_loaded()) {
		if (!create)
			return bft_bpf_err_set(b, -ENOENT, "no BPF session at "
					       "%s: attach or start one first",
					       bft_bpf_pin_dir());
		err = session_create(b);
	}
	if (!err)
		err = pins_open(b);
	if (!err)
		err = bft_bpf_owner_reap(b);
	if (err)
		pins_close(b);
	else
		bft_bpf_targets_reap(b);
	return err;
}

/*
 * Commands that change the session hold an exclusive lock on the pin
 * directory, as the module's commands hold bft_lock: two bfctl at once
 * cannot interleave an attach with a stop.  A descriptor or -errno.
 */
int bft_bpf_session_lock(struct bft_bpf *b)
{
	int fd = open(bft_bpf_pin_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return bft_bpf_err_set(b, -errno, "%s: %s", bft_bpf_pin_dir(),
				       strerror(errno));
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int err = -errno;

			close(fd);
			return bft_bpf_err_set(b, err, "locking %s: %s",
					       bft_bpf_pin_dir(),
					       strerror(-err));
		}
	}
	return fd;
}

void bft_bpf_session_unlock(int fd)
{
	close(fd);	/* drops the lock */
}

/* The session (made first if create), locked: the lock's fd, or an error. */
int bft_bpf_session_open_locked(struct bft_bpf *b, bool create)
{
	int err = bft_bpf_session_open(b, create);

	return err ? err : bft_bpf_session_lock(b);
}

static int handle_open(struct bft_bpf **bp, int create, char *err,
		       size_t errlen)
{
	struct bft_bpf *b;
	int ret;

	*bp = NULL;
	ret = bft_bpf_probe(err, errlen);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < NR_PINS; i++)
		*pin_fd(b, i) = -1;
	b->nr_cpus = cpus_possible();
	ret = bft_bpf_session_open(b, create > 0);
	if (ret == -ENOENT && create < 0)
		ret = 0;	/* lazy: made by the first change */
	if (ret) {
		if (err)
			snprintf(err, errlen, "%s", b->err);
		bft_bpf_close(b);
		return ret;
	}
	*bp = b;
	return 0;
}

int bft_bpf_open(struct bft_bpf **bp, bool create, char *err, size_t errlen)
{
	return handle_open(bp, create ? 1 : 0, err, errlen);
}

int bft_bpf_open_lazy(struct bft_bpf **bp, char *err, size_t errlen)
{
	return handle_open(bp, -1, err, errlen);
}

void bft_bpf_close(struct bft_bpf *b)
{
	if (!b)
		return;
	if (b->own)
		bft_bpf_owner_release(b);
	if (b->count_owed && b->ctl_fd >= 0) {
		/* reaped while the lock was taken: the last one counts */
		int fd = bft_bpf_session_lock(b);

		if (fd >= 0) {
			bft_bpf_probes_recount(b);
			bft_bpf_session_unlock(fd);
		}
	}
	pins_close(b);
	free(b);
}

int bft_bpf_unload(char *err, size_t errlen)
{
	struct bft_bpf *b;
	char p[PATH_MAX];
	int ret;

	if (!bft_bpf_loaded()) {
		snprintf(err, errlen, "no BPF session at %s", bft_bpf_pin_dir());
		return -ENOENT;
	}
	ret = bft_bpf_open(&b, false, err, errlen);
	if (ret)
		return ret;
	bft_bpf_mode_cmd(b, BFT_CMD_STOP, NULL);
	bft_bpf_close(b);
	for (size_t i = 0; i < NR_PINS; i++) {
		bft_bpf_pin_path(p, sizeof(p), pin_names[i]);
		unlink(p);
	}
	bft_bpf_pin_path(p, sizeof(p), "links");
	rmdir(p);
	if (rmdir(bft_bpf_pin_dir()) && errno != ENOENT) {
		snprintf(err, errlen, "rmdir %s: %s", bft_bpf_pin_dir(),
			 strerror(errno));
		return -errno;
	}
	return 0;
}
