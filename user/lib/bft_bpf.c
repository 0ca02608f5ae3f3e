// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's control side: load and pin the programs of
 * user/bpf/bft.bpf.c, attach them to a target's functions, change modes
 * and options, and read the per-CPU rings.  Semantics and errno values
 * follow the module (kmod/bft_control.c, kmod/bft_attach.c); see
 * bft_bpf.h and docs/bpf-backend.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bft_bpf.h"
#include "bft_bpf_shared.h"
#include "bft_bpffs.h"
#include "bft_owner.h"
#include "bft_varint.h"
#include "bft.skel.h"

/* include/linux/proc_ns.h: the first pid namespace's inode, fixed */
#define PROC_PID_INIT_INO		0xEFFFFFFCU
#define BFT_F_UPROBE_MULTI_RETURN	1U

/* Options: the module's defaults and bounds (kmod/bft_control.c). */
static const struct {
	uint64_t def, min, max;
	uint32_t flags;
} opt_desc[BFT_OPT_MAX + 1] = {
	[BFT_OPT_BUF_SIZE] = { 1 << 20, 1 << 12, 1 << 28,
			       BFT_OPTF_POW2 | BFT_OPTF_IDLE_ONLY },
	[BFT_OPT_FLUSH_MS] = { 100, 1, 10000, 0 },
	[BFT_OPT_HEARTBEAT_MS] = { 1000, 10, 60000, 0 },
	[BFT_OPT_MAX_DEPTH] = { 0, 0, BFT_URETPROBE_DEPTH, BFT_OPTF_IDLE_ONLY },
	[BFT_OPT_TIME_RES_NS] = { 1000, 1, 1000000, BFT_OPTF_IDLE_ONLY },
	[BFT_OPT_WATERMARK] = { 0, 0, 1 << 28, 0 },
	[BFT_OPT_MAX_PROBES] = { 4096, 1, 65536, 0 },
};

static bool opt_supported(uint32_t id)
{
	return id >= 1 && id <= BFT_OPT_MAX && opt_desc[id].max;
}

struct bft_bpf {
	int ctl_fd;		/* bft_ctl_map */
	int cpus_fd;		/* bft_cpus */
	int rings_fd;		/* bft_rings */
	int hits_fd;		/* bft_hits: ids below BFT_BPF_NEAR_IDS */
	int hits_far_fd;	/* bft_hits_far: the others */
	int methods_fd;
	int read_fd;
	int enter_fd, exit_fd, prog_ctl_fd;
	unsigned int nr_cpus;
	bool own;		/* this handle started the session, not persist */
	bool count_owed;	/* reaped while the lock was taken: recount */
	char err[512];
	char notice[PATH_MAX + 96];	/* what a call did, for the user */
};

/*
 * A pin is renamed when what it holds changes in a way another version
 * would misread: that version then finds a pin missing and refuses the
 * session (ESTALE, open_pins()).  prog_ctl_cpu: bft_ctl takes the CPU to
 * work on as args[2].  An older program ignores it and works on the CPU it
 * runs on: for an offline CPU, served from this one, it would seal and
 * mark this CPU's ring (a second stop BREAK there) instead.  cpus_tbits:
 * the per-CPU state grew the time bits and their counts; an older binary
 * would read it into a buffer sized for its own layout, which
 * check_layout() cannot stop.
 */
static const char *const pin_names[] = {
	"ctl", "cpus_tbits", "rings", "hits", "hits_far", "methods", "read",
	"prog_enter", "prog_exit", "prog_ctl_cpu",
};

static int *pin_fd(struct bft_bpf *b, size_t i)
{
	int *fds[] = {
		&b->ctl_fd, &b->cpus_fd, &b->rings_fd, &b->hits_fd,
		&b->hits_far_fd, &b->methods_fd, &b->read_fd, &b->enter_fd, &b->exit_fd,
		&b->prog_ctl_fd,
	};

	return fds[i];
}

#define NR_PINS (sizeof(pin_names) / sizeof(pin_names[0]))

static int hits_map(const struct bft_bpf *b, uint32_t method_id)
{
	return method_id < BFT_BPF_NEAR_IDS ? b->hits_fd : b->hits_far_fd;
}

static int fail(struct bft_bpf *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct bft_bpf *b, int err, const char *fmt, ...)
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

static void pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", bft_bpf_pin_dir(), name);
}

static unsigned int possible_cpus(void)
{
	int n = libbpf_num_possible_cpus();

	return n > 0 ? (unsigned int)n : 1;
}

/* ---- can this machine run it? ---- */

static bool have_caps(void)
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
	if (!have_caps()) {
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

	pin_path(p, sizeof(p), "ctl");
	return access(p, F_OK) == 0;
}

/* Whether a session made now would attach with uprobe_multi links. */
static bool want_multi(void)
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
		return want_multi();
	if (bpf_map_lookup_elem(b->ctl_fd, &zero, &ctl))
		return false;
	return ctl.flags & BFT_BPF_F_MULTI;
}

/* ---- the session ---- */

static int read_ctl(struct bft_bpf *b, struct bft_bpf_ctl *ctl)
{
	uint32_t zero = 0;

	if (bpf_map_lookup_elem(b->ctl_fd, &zero, ctl))
		return fail(b, -errno, "reading the control map: %s",
			    strerror(errno));
	return 0;
}

static int write_ctl(struct bft_bpf *b, const struct bft_bpf_ctl *ctl)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(b->ctl_fd, &zero, ctl, BPF_ANY))
		return fail(b, -errno, "writing the control map: %s",
			    strerror(errno));
	return 0;
}

/* A fresh ring buffer of size bytes into every CPU's slot. */
static int make_rings(struct bft_bpf *b, uint32_t size)
{
	for (uint32_t cpu = 0; cpu < b->nr_cpus; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bft_ring", 0, 0,
					size, NULL);
		int err;

		if (fd < 0)
			return fail(b, -errno, "creating the ring of CPU %u: %s",
				    cpu, strerror(errno));
		err = bpf_map_update_elem(b->rings_fd, &cpu, &fd, BPF_ANY);
		err = err ? -errno : 0;
		close(fd);
		if (err)
			return fail(b, err, "installing the ring of CPU %u: %s",
				    cpu, strerror(-err));
	}
	return 0;
}

/* Every CPU's writer state as the module's rings start: a SYNC owed. */
static int reset_cpus(struct bft_bpf *b, uint32_t res)
{
	size_t sz = (sizeof(struct bft_bpf_cpu) + 7) & ~(size_t)7;
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
		err = fail(b, -errno, "initialising the CPU state: %s",
			   strerror(errno));
	free(vals);
	return err;
}

/* The control map of a new session: what status and options show
 * before there is one. */
static void default_ctl(struct bft_bpf_ctl *ctl)
{
	memset(ctl, 0, sizeof(*ctl));
	ctl->mode = BFT_MODE_INITIALIZING;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++)
		ctl->opts[id] = opt_desc[id].def;
	ctl->time_res_ns = ctl->opts[BFT_OPT_TIME_RES_NS];
	ctl->watermark = ctl->opts[BFT_OPT_BUF_SIZE] / 4;
	ctl->flags = want_multi() ? BFT_BPF_F_MULTI : 0;
}

static int load_and_pin(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;
	struct bft_bpf_skel *skel;
	char p[PATH_MAX];
	int err, inner = -1;
	bool multi;

	default_ctl(&ctl);
	multi = ctl.flags & BFT_BPF_F_MULTI;

	skel = bft_bpf_skel__open();
	if (!skel)
		return fail(b, -errno, "opening the BPF object: %s",
			    strerror(errno));
	bpf_map__set_max_entries(skel->maps.bft_rings, b->nr_cpus);
	bpf_map__set_max_entries(skel->maps.bft_read, b->nr_cpus);
	/* the template of the per-CPU rings: their size */
	inner = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bft_ring", 0, 0,
			       ctl.opts[BFT_OPT_BUF_SIZE], NULL);
	if (inner < 0 || bpf_map__set_inner_map_fd(skel->maps.bft_rings, inner)) {
		err = fail(b, -errno, "creating a ring buffer: %s",
			   strerror(errno));
		goto out;
	}
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.bft_enter,
						      BFT_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.bft_exit,
						      BFT_TRACE_UPROBE_MULTI);
	}
	err = bft_bpf_skel__load(skel);
	if (err) {
		fail(b, err, "loading the BPF programs: %s (the verifier's log "
		     "is on stderr)", strerror(-err));
		goto out;
	}
	b->ctl_fd = bpf_map__fd(skel->maps.bft_ctl_map);
	b->cpus_fd = bpf_map__fd(skel->maps.bft_cpus);
	b->rings_fd = bpf_map__fd(skel->maps.bft_rings);
	err = write_ctl(b, &ctl);
	if (!err)
		err = reset_cpus(b, ctl.time_res_ns);
	if (!err)
		err = make_rings(b, ctl.opts[BFT_OPT_BUF_SIZE]);
	if (err)
		goto out;
	if (mkdir(bft_bpf_pin_dir(), 0700) && errno != EEXIST) {
		err = fail(b, -errno, "mkdir %s: %s", bft_bpf_pin_dir(),
			   strerror(errno));
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
		};

		/* "ctl" last: its presence means a complete session */
		for (size_t i = NR_PINS; i-- > 0;) {
			pin_path(p, sizeof(p), pin_names[i]);
			if (bpf_obj_pin(fds[i], p)) {
				err = fail(b, -errno, "pinning %s: %s", p,
					   strerror(errno));
				goto out;
			}
		}
	}
	pin_path(p, sizeof(p), "links");
	if (mkdir(p, 0700) && errno != EEXIST)
		err = fail(b, -errno, "mkdir %s: %s", p, strerror(errno));
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
static int create_once(struct bft_bpf *b)
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
		return fail(b, -errno, "%s: %s", parent, strerror(errno));
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	if (!bft_bpf_loaded())
		err = load_and_pin(b);
	close(fd);
	return err;
}

/*
 * A version whose per-CPU state has another layout would be read, and
 * written, at the wrong offsets: refuse its session as one without a pin
 * of ours.
 */
static int check_layout(struct bft_bpf *b)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(b->cpus_fd, &info, &len))
		return fail(b, -errno, "reading the BPF session's per-CPU "
			    "state: %s", strerror(errno));
	if (info.value_size != sizeof(struct bft_bpf_cpu))
		return fail(b, -ESTALE, "the BPF session in %s keeps its "
			    "per-CPU state in another layout (%u bytes, not "
			    "%zu): another version of bftrace made it; remove "
			    "that directory to end it", bft_bpf_pin_dir(),
			    info.value_size, sizeof(struct bft_bpf_cpu));
	return 0;
}

static int open_pins(struct bft_bpf *b)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < NR_PINS; i++) {
		pin_path(p, sizeof(p), pin_names[i]);
		*pin_fd(b, i) = bpf_obj_get(p);
		if (*pin_fd(b, i) < 0) {
			int err = -errno;

			/*
			 * "ctl" was there, and still is (an unload removes
			 * it first): not ENOENT, which every caller takes
			 * for "no session yet" and goes on without one
			 */
			if (err == -ENOENT && i && bft_bpf_loaded())
				return fail(b, -ESTALE, "the BPF session in %s has "
					    "no %s: another version of bftrace "
					    "made it; remove that directory to "
					    "end it", bft_bpf_pin_dir(),
					    pin_names[i]);
			if (err == -ENOENT)
				return fail(b, err, "no BPF session (%s is "
					    "missing): attach or start one first",
					    p);
			return fail(b, err, "opening %s: %s", p, strerror(-err));
		}
	}
	return check_layout(b);
}

static void close_pins(struct bft_bpf *b)
{
	for (size_t i = 0; i < NR_PINS; i++) {
		if (*pin_fd(b, i) >= 0)
			close(*pin_fd(b, i));
		*pin_fd(b, i) = -1;
	}
}

static int reap_dead_owner(struct bft_bpf *b);
static void reap_exited(struct bft_bpf *b);
static int session_lock(struct bft_bpf *b);
static void session_unlock(int fd);
static void count_changed(struct bft_bpf *b);

/*
 * The pins, opened by the first call that needs them; with create, the
 * session is made if there is none, and only then: asking (status, caps,
 * options) leaves the BPF filesystem as it was.  A session whose owner
 * died is ended before anything else sees it.
 */
static int session(struct bft_bpf *b, bool create)
{
	int err = 0;

	if (b->ctl_fd >= 0)
		return 0;
	if (!bft_bpf_loaded()) {
		if (!create)
			return fail(b, -ENOENT, "no BPF session at %s: attach "
				    "or start one first", bft_bpf_pin_dir());
		err = create_once(b);
	}
	if (!err)
		err = open_pins(b);
	if (!err)
		err = reap_dead_owner(b);
	if (err)
		close_pins(b);
	else
		reap_exited(b);
	return err;
}

static int open_handle(struct bft_bpf **bp, int create, char *err,
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
	b->nr_cpus = possible_cpus();
	ret = session(b, create > 0);
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
	return open_handle(bp, create ? 1 : 0, err, errlen);
}

int bft_bpf_open_lazy(struct bft_bpf **bp, char *err, size_t errlen)
{
	return open_handle(bp, -1, err, errlen);
}

static void end_own_session(struct bft_bpf *b);

void bft_bpf_close(struct bft_bpf *b)
{
	if (!b)
		return;
	if (b->own)
		end_own_session(b);
	if (b->count_owed && b->ctl_fd >= 0) {
		/* reaped while the lock was taken: the last one counts */
		int fd = session_lock(b);

		if (fd >= 0) {
			count_changed(b);
			session_unlock(fd);
		}
	}
	close_pins(b);
	free(b);
}

/* ---- running the control program on a CPU ---- */

static int run_ctl(struct bft_bpf *b, unsigned int cpu, uint64_t op,
		   uint64_t arg, int *ret)
{
	uint64_t args[3] = { op, arg, cpu };
	struct timespec ts = { 0, 100000 };
	bool offline = false;

	for (int tries = 0; tries < 10000; tries++) {
		LIBBPF_OPTS(bpf_test_run_opts, o,
			    .ctx_in = args, .ctx_size_in = sizeof(args),
			    .flags = offline ? 0 : BPF_F_TEST_RUN_ON_CPU,
			    .cpu = offline ? 0 : cpu);

		if (bpf_prog_test_run_opts(b->prog_ctl_fd, &o)) {
			/*
			 * An offline CPU: served from this one, or its
			 * batch and heartbeats wait until it is back.
			 */
			if (errno == ENXIO && !offline) {
				offline = true;
				continue;
			}
			return fail(b, -errno, "running the control program "
				    "for CPU %u: %s", cpu, strerror(errno));
		}
		/* a kernel before 5.19 cannot serve it: it waits */
		if (o.retval == BFT_BPF_NOCPU && offline)
			return 0;
		if (o.retval != BFT_BPF_BUSY) {
			if (ret)
				*ret = (int)o.retval;
			return 0;
		}
		/* a handler on that CPU was preempted mid-record (or, served
		 * from here, runs there again as it comes back): wait */
		nanosleep(&ts, NULL);
	}
	return fail(b, -EBUSY, "CPU %u stays busy", cpu);
}

static int run_all(struct bft_bpf *b, uint64_t op, uint64_t arg)
{
	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++) {
		int err = run_ctl(b, cpu, op, arg, NULL);

		if (err)
			return err;
	}
	return 0;
}

/*
 * Commands that change the session hold an exclusive lock on the pin
 * directory, as the module's commands hold bft_lock: two bfctl at once
 * cannot interleave an attach with a stop.  A descriptor or -errno.
 */
static int session_lock(struct bft_bpf *b)
{
	int fd = open(bft_bpf_pin_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return fail(b, -errno, "%s: %s", bft_bpf_pin_dir(),
			    strerror(errno));
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR) {
			int err = -errno;

			close(fd);
			return fail(b, err, "locking %s: %s", bft_bpf_pin_dir(),
				    strerror(-err));
		}
	}
	return fd;
}

static void session_unlock(int fd)
{
	close(fd);	/* drops the lock */
}

/* The session (made first if create), locked: the lock's fd, or an error. */
static int session_locked(struct bft_bpf *b, bool create)
{
	int err = session(b, create);

	return err ? err : session_lock(b);
}

/* ---- targets and links ---- */

static void links_dir(char *buf, size_t len, uint32_t tgid)
{
	if (tgid)
		snprintf(buf, len, "%s/links/%u", bft_bpf_pin_dir(), tgid);
	else
		snprintf(buf, len, "%s/links", bft_bpf_pin_dir());
}

/* A zombie has released its memory: no probe of it can fire. */
static bool tgid_alive(uint32_t tgid)
{
	return !bft_proc_exited(tgid);
}

/*
 * The process of thread id tid (the Tgid line of its status), 0 if that
 * cannot be read.  /proc/<tid> exists for every thread, not only for a
 * process's first one.
 */
static uint32_t tgid_of(uint32_t tid)
{
	char p[64], line[128];
	unsigned int v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/status", tid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* tgids with a links directory, into out (up to cap); count. */
static size_t list_targets(uint32_t *out, size_t cap)
{
	char p[PATH_MAX];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	links_dir(p, sizeof(p), 0);
	d = opendir(p);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		unsigned long v = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end)
			continue;
		if (n < cap)
			out[n] = (uint32_t)v;
		n++;
	}
	closedir(d);
	return n;
}

/* Live probes: method entries not yet marked gone. */
static size_t count_probes(struct bft_bpf *b)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	size_t n = 0;

	if (!m)
		return 0;
	while (!bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(b->methods_fd, &k, m) &&
		    !(m->flags & BFT_PF_GONE))
			n++;
	}
	free(m);
	return n;
}

/* The table changed: the control map's count follows (under the lock). */
static void count_changed(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;

	if (!read_ctl(b, &ctl)) {
		ctl.nr_probes = (uint32_t)count_probes(b);
		write_ctl(b, &ctl);
	}
}

static int uprobe_pmu(int *type, int *ret_bit)
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

/* One perf-event uprobe with the program on it: a link fd or -errno. */
static int link_one(int prog_fd, uint32_t tgid, const char *path,
		    uint64_t offset, bool ret, uint64_t cookie)
{
	struct perf_event_attr pa;
	int type, ret_bit, pfd, lfd, err;
	LIBBPF_OPTS(bpf_link_create_opts, lo, .perf_event.bpf_cookie = cookie);

	err = uprobe_pmu(&type, &ret_bit);
	if (err)
		return err;
	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = type;
	pa.config = ret ? 1ULL << ret_bit : 0;
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
	struct uprobe_multi_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = BFT_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.multi_flags = ret ? BFT_F_UPROBE_MULTI_RETURN : 0;
	a.pid = tgid;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

static int pin_link(struct bft_bpf *b, int fd, uint32_t tgid,
		    unsigned int *seq)
{
	char p[PATH_MAX];
	int err;

	for (;; (*seq)++) {
		snprintf(p, sizeof(p), "%s/links/%u/%u", bft_bpf_pin_dir(),
			 tgid, *seq);
		if (access(p, F_OK))
			break;
	}
	err = bpf_obj_pin(fd, p) ? -errno : 0;
	close(fd);
	if (err)
		return fail(b, err, "pinning %s: %s", p, strerror(-err));
	(*seq)++;
	return 0;
}

/* Undo pin_link() when the other half of a probe group failed. */
static void unpin_link(uint32_t tgid, unsigned int seq)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/links/%u/%u", bft_bpf_pin_dir(), tgid, seq);
	unlink(p);	/* the last reference: the link goes */
}

/* The module's checks of one probe (kmod/bft_attach.c), without the offset's segment. */
static int check_probe(struct bft_bpf *b, size_t i, const struct bft_nl_probe *p)
{
	unsigned char magic[4];
	struct stat st;
	int fd;

	if (!p->path || stat(p->path, &st))
		return fail(b, -ENOENT, "probe %zu: %s: no such file", i,
			    p->path ? p->path : "(null)");
	if (S_ISDIR(st.st_mode))
		return fail(b, -EISDIR, "probe %zu: %s is a directory", i,
			    p->path);
	if (!S_ISREG(st.st_mode))
		return fail(b, -EINVAL, "probe %zu: %s is not a regular file",
			    i, p->path);
	if (!(p->flags & BFT_PF_ENTRY) || (p->flags & ~BFT_PF_ALL))
		return fail(b, -EINVAL, "probe %zu: flags 0x%x: the BPF "
			    "backend takes entry and return probes only", i,
			    p->flags);
	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4)) {
		if (fd >= 0)
			close(fd);
		return fail(b, -ENOEXEC, "probe %zu: %s is not ELF", i, p->path);
	}
	close(fd);
	if (p->offset >= (uint64_t)st.st_size)
		return fail(b, -ERANGE, "probe %zu: offset %#llx is past the "
			    "end of %s", i, (unsigned long long)p->offset,
			    p->path);
	if (strlen(p->path) >= BFT_PATH_MAX ||
	    (p->name && strlen(p->name) >= BFT_NAME_MAX))
		return fail(b, -EINVAL, "probe %zu: path or name too long", i);
	return 0;
}

static int check_batch(struct bft_bpf *b, uint32_t tgid,
		       const struct bft_nl_probe *probes, size_t n)
{
	struct bft_bpf_ctl ctl;
	struct bft_bpf_method m;
	uint32_t targets[BFT_MAX_TARGETS], owner;
	size_t nt;
	int err;

	if (!tgid || !tgid_alive(tgid))
		return fail(b, -ESRCH, "no process with tgid %u", tgid);
	/* as the module: the programs filter on the process (BFT_BPF_COOKIE) */
	owner = tgid_of(tgid);
	if (owner && owner != tgid)
		return fail(b, -ESRCH, "%u is a thread of process %u, not a "
			    "process", tgid, owner);
	nt = list_targets(targets, BFT_MAX_TARGETS);
	if (nt >= BFT_MAX_TARGETS) {
		char p[PATH_MAX];

		links_dir(p, sizeof(p), tgid);
		if (access(p, F_OK))
			return fail(b, -E2BIG, "too many targets");
	}
	err = read_ctl(b, &ctl);
	if (err)
		return err;
	if (count_probes(b) + n > ctl.opts[BFT_OPT_MAX_PROBES])
		return fail(b, -E2BIG, "%zu probes exceed the limit (option "
			    "max_probes %llu)", n,
			    (unsigned long long)ctl.opts[BFT_OPT_MAX_PROBES]);
	for (size_t i = 0; i < n; i++) {
		struct bft_bpf_method_key k = { tgid, probes[i].method_id };

		err = check_probe(b, i, &probes[i]);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++) {
			if (probes[j].method_id == probes[i].method_id ||
			    (probes[j].offset == probes[i].offset &&
			     !strcmp(probes[j].path, probes[i].path)))
				return fail(b, -EEXIST, "probe %zu: twice in "
					    "the batch", i);
		}
		if (!bpf_map_lookup_elem(b->methods_fd, &k, &m) &&
		    !(m.flags & BFT_PF_GONE))
			return fail(b, -EEXIST, "probe %zu: method id %u is "
				    "in use", i, probes[i].method_id);
	}
	return 0;
}

static int record_method(struct bft_bpf *b, uint32_t tgid,
			 const struct bft_nl_probe *p)
{
	struct bft_bpf_method_key k = { tgid, p->method_id };
	struct bft_bpf_method *m = calloc(1, sizeof(*m));
	uint64_t *zeros = calloc(b->nr_cpus, sizeof(uint64_t));
	int err = 0;

	if (!m || !zeros) {
		err = -ENOMEM;
		goto out;
	}
	m->offset = p->offset;
	m->flags = p->flags;
	snprintf(m->path, sizeof(m->path), "%s", p->path);
	snprintf(m->name, sizeof(m->name), "%s", p->name ? p->name : "");
	if (bpf_map_update_elem(b->methods_fd, &k, m, BPF_ANY))
		err = fail(b, -errno, "method table: %s", strerror(errno));
	/*
	 * A hit count per method id, kept across detach until start
	 * (forget_gone()); a far id's is made here.
	 */
	else if (p->method_id >= BFT_BPF_NEAR_IDS &&
		 bpf_map_update_elem(b->hits_far_fd, &p->method_id, zeros,
				     BPF_NOEXIST) && errno != EEXIST)
		err = fail(b, -errno, "hit counters: %s", strerror(errno));
out:
	free(m);
	free(zeros);
	return err;
}

/*
 * The target as the programs name it (BFT_BPF_COOKIE): the tgid given,
 * from the first pid namespace, whose pids are the kernel's own; else 0,
 * and the programs leave the process filter to the kernel.
 */
static uint32_t cookie_tgid(uint32_t tgid)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) || st.st_ino != PROC_PID_INIT_INO)
		return 0;
	return tgid;
}

/* Probes of one file, attached with two uprobe_multi links. */
static int attach_group_multi(struct bft_bpf *b, uint32_t tgid,
			      uint32_t ctgid, const struct bft_nl_probe *probes,
			      const size_t *idx, size_t n, int *results,
			      unsigned int *seq)
{
	uint64_t *offs = calloc(n, sizeof(*offs));
	uint64_t *cookies = calloc(n, sizeof(*cookies));
	size_t nret = 0;
	int fd, err = 0;

	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[idx[i]];

		offs[i] = p->offset;
		cookies[i] = BFT_BPF_COOKIE(p->method_id, p->flags, ctgid);
	}
	fd = bft_bpf_link_multi(b->enter_fd, tgid, probes[idx[0]].path, offs, cookies,
			n, false);
	if (fd < 0) {
		err = fail(b, fd, "uprobe_multi on %s: %s", probes[idx[0]].path,
			   strerror(-fd));
		goto out;
	}
	err = pin_link(b, fd, tgid, seq);
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[idx[i]];

		if (p->flags & BFT_PF_RETURN) {
			offs[nret] = p->offset;
			cookies[nret++] = BFT_BPF_COOKIE(p->method_id, p->flags,
							 ctgid);
		}
	}
	if (nret) {
		unsigned int entries = *seq - 1;

		fd = bft_bpf_link_multi(b->exit_fd, tgid, probes[idx[0]].path, offs,
				cookies, nret, true);
		if (fd < 0)
			err = fail(b, fd, "uretprobe_multi on %s: %s",
				   probes[idx[0]].path, strerror(-fd));
		else
			err = pin_link(b, fd, tgid, seq);
		if (err)	/* entries without their returns: none */
			unpin_link(tgid, entries);
	}
out:
	for (size_t i = 0; i < n; i++)
		results[idx[i]] = err;
	free(offs);
	free(cookies);
	return err;
}

static int attach_one(struct bft_bpf *b, uint32_t tgid, uint32_t ctgid,
		      const struct bft_nl_probe *p, unsigned int *seq)
{
	uint64_t cookie = BFT_BPF_COOKIE(p->method_id, p->flags, ctgid);
	int fd, err;

	fd = link_one(b->enter_fd, tgid, p->path, p->offset, false, cookie);
	if (fd < 0)
		return fail(b, fd, "uprobe on %s+%#llx: %s", p->path,
			    (unsigned long long)p->offset, strerror(-fd));
	err = pin_link(b, fd, tgid, seq);
	if (err || !(p->flags & BFT_PF_RETURN))
		return err;
	fd = link_one(b->exit_fd, tgid, p->path, p->offset, true, cookie);
	if (fd < 0)
		err = fail(b, fd, "uretprobe on %s+%#llx: %s", p->path,
			   (unsigned long long)p->offset, strerror(-fd));
	else
		err = pin_link(b, fd, tgid, seq);
	if (err)	/* an entry without its return: none */
		unpin_link(tgid, *seq - 1);
	return err;
}

static int do_attach(struct bft_bpf *b, uint32_t tgid,
		   const struct bft_nl_probe *probes, size_t n, int *results)
{
	bool multi = bft_bpf_multi(b);
	int *res = results ? results : calloc(n ? n : 1, sizeof(int));
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	uint32_t ctgid = cookie_tgid(tgid);	/* once, not per probe */
	unsigned int seq = 0;
	int err, first = 0, ok = 0;
	char p[PATH_MAX];

	if (!res || !idx || !done) {
		err = -ENOMEM;
		goto out;
	}
	err = check_batch(b, tgid, probes, n);
	if (err) {
		for (size_t i = 0; i < n; i++)
			res[i] = err;
		goto out;
	}
	links_dir(p, sizeof(p), tgid);
	if (mkdir(p, 0700) && errno != EEXIST) {
		err = fail(b, -errno, "mkdir %s: %s", p, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		if (done[i])
			continue;
		if (!multi) {
			done[i] = true;
			res[i] = attach_one(b, tgid, ctgid, &probes[i], &seq);
			continue;
		}
		for (size_t j = i; j < n; j++) {
			if (!done[j] && !strcmp(probes[j].path, probes[i].path)) {
				done[j] = true;
				idx[k++] = j;
			}
		}
		attach_group_multi(b, tgid, ctgid, probes, idx, k, res, &seq);
	}
	for (size_t i = 0; i < n; i++) {
		if (!res[i]) {
			ok++;
			res[i] = record_method(b, tgid, &probes[i]);
		} else if (!first) {
			first = res[i];
		}
	}
	err = ok ? 0 : first;
	if (!ok)
		rmdir(p);	/* a target of nothing is no target (if empty) */
out:
	if (res != results)
		free(res);
	free(idx);
	free(done);
	return err;
}

/* Mark the methods of tgid (0: all) detached, as the module keeps them. */
static void retire_methods(struct bft_bpf *b, uint32_t tgid)
{
	struct bft_bpf_method_key k, next, *prev = NULL, *keys = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	size_t n = 0, cap = 0;

	/*
	 * Keys first, updates after: an update replaces the element at the
	 * head of its bucket, so updating while walking can visit the same
	 * keys again and again (seen: a stop of 280 probes never ending).
	 */
	while (m && !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (tgid && k.tgid != tgid)
			continue;
		if (n == cap) {
			void *v = realloc(keys, (cap = cap * 2 + 64) * sizeof(*keys));

			if (!v)
				break;
			keys = v;
		}
		keys[n++] = k;
	}
	for (size_t i = 0; m && i < n; i++) {
		if (bpf_map_lookup_elem(b->methods_fd, &keys[i], m))
			continue;
		m->flags |= BFT_PF_GONE;
		bpf_map_update_elem(b->methods_fd, &keys[i], m, BPF_EXIST);
	}
	free(keys);
	free(m);
}

static int unpin_target(struct bft_bpf *b, uint32_t tgid)
{
	char p[PATH_MAX], f[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	links_dir(p, sizeof(p), tgid);
	d = opendir(p);
	if (!d)
		return errno == ENOENT ? -ENOENT :
		       fail(b, -errno, "%s: %s", p, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", p, de->d_name);
		unlink(f);	/* the last reference: the link goes */
	}
	closedir(d);
	if (rmdir(p))
		return fail(b, -errno, "rmdir %s: %s", p, strerror(errno));
	retire_methods(b, tgid);
	return 0;
}

static int do_detach(struct bft_bpf *b, uint32_t tgid)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n;
	int err;

	if (tgid) {
		err = unpin_target(b, tgid);
		count_changed(b);
		if (err == -ENOENT)
			return fail(b, err, "no target with tgid %u", tgid);
		return err;
	}
	n = list_targets(t, BFT_MAX_TARGETS);
	for (size_t i = 0; i < n && i < BFT_MAX_TARGETS; i++) {
		err = unpin_target(b, t[i]);
		if (err && err != -ENOENT)
			break;
		err = 0;
	}
	count_changed(b);
	return err;
}

/* ---- modes ---- */

static const char *const mode_text[] = {
	"initializing", "tracing", "paused", "suspended", "shutting down",
};

static bool recording(uint32_t mode)
{
	return mode == BFT_MODE_TRACING || mode == BFT_MODE_PAUSED;
}

static bool session_active(uint32_t mode)
{
	return recording(mode) || mode == BFT_MODE_SUSPENDED;
}

static int signal_targets(int sig)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n = list_targets(t, BFT_MAX_TARGETS);
	int ret = 0;

	for (size_t i = 0; i < n && i < BFT_MAX_TARGETS; i++)
		if (kill((pid_t)t[i], sig) && !ret)
			ret = -errno;
	return ret;
}

static void forget_gone(struct bft_bpf *b)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	uint64_t *zeros = calloc(b->nr_cpus, sizeof(uint64_t));

	while (m && zeros &&
	       !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		/* a forgotten id starts from zero when it is used again */
		bpf_map_update_elem(hits_map(b, k.method_id), &k.method_id,
				    zeros, BPF_EXIST);
		if (!bpf_map_lookup_elem(b->methods_fd, &k, m) &&
		    (m->flags & BFT_PF_GONE)) {
			bpf_map_delete_elem(b->methods_fd, &k);
			continue;	/* the next key after a deleted one */
		}
		prev = &k;
	}
	free(m);
	free(zeros);
}

static void set_owner(struct bft_bpf_ctl *ctl, const struct bft_owner *o)
{
	ctl->owner = o ? o->tgid : 0;
	ctl->owner_start = o ? o->start : 0;
	ctl->owner_pidns = o ? o->pidns : 0;
	ctl->guard = 0;
}

static int do_flush(struct bft_bpf *b, bool heartbeat);

static int set_mode(struct bft_bpf *b, struct bft_bpf_ctl *ctl, uint32_t mode)
{
	ctl->mode = mode;
	return write_ctl(b, ctl);
}

/*
 * A mode command; owner is the starter of a session that ends with it
 * (START without persist), NULL otherwise.
 */
static int do_mode_cmd(struct bft_bpf *b, int cmd,
		       const struct bft_owner *owner, uint8_t *mode)
{
	struct bft_bpf_ctl ctl;
	uint32_t cur;
	int err;

	err = read_ctl(b, &ctl);
	if (err)
		return err;
	cur = ctl.mode;
	switch (cmd) {
	case BFT_CMD_START:
		if (session_active(cur))
			goto bad;
		forget_gone(b);
		ctl.time_res_ns = ctl.opts[BFT_OPT_TIME_RES_NS];
		ctl.max_depth = ctl.opts[BFT_OPT_MAX_DEPTH];
		ctl.sync_ms = ctl.opts[BFT_OPT_FLUSH_MS];
		ctl.watermark = ctl.opts[BFT_OPT_WATERMARK] ?
				ctl.opts[BFT_OPT_WATERMARK] :
				ctl.opts[BFT_OPT_BUF_SIZE] / 4;
		if (ctl.watermark > ctl.opts[BFT_OPT_BUF_SIZE] / 2)
			ctl.watermark = ctl.opts[BFT_OPT_BUF_SIZE] / 2;
		set_owner(&ctl, owner);
		err = write_ctl(b, &ctl);
		if (!err)
			err = run_all(b, BFT_BPF_OP_RESTART, ctl.time_res_ns);
		if (!err)
			err = set_mode(b, &ctl, BFT_MODE_TRACING);
		break;
	case BFT_CMD_STOP:
		set_owner(&ctl, NULL);
		err = set_mode(b, &ctl, BFT_MODE_SHUTTING_DOWN);
		if (!err && session_active(cur))
			err = run_all(b, BFT_BPF_OP_MARK, BFT_BREAK_STOP);
		if (!err && cur == BFT_MODE_PAUSED)
			signal_targets(SIGCONT);
		if (!err)
			err = do_detach(b, 0);
		if (!err)
			err = do_flush(b, false);
		break;
	case BFT_CMD_PAUSE:
		if (cur != BFT_MODE_TRACING)
			goto bad;
		err = signal_targets(SIGSTOP);
		if (err) {
			signal_targets(SIGCONT);
			return fail(b, err, "a target could not be stopped");
		}
		err = set_mode(b, &ctl, BFT_MODE_PAUSED);
		break;
	case BFT_CMD_UNPAUSE:
		if (cur != BFT_MODE_PAUSED)
			goto bad;
		signal_targets(SIGCONT);
		err = set_mode(b, &ctl, BFT_MODE_TRACING);
		break;
	case BFT_CMD_SUSPEND:
		if (cur != BFT_MODE_TRACING)
			goto bad;
		err = set_mode(b, &ctl, BFT_MODE_SUSPENDED);
		if (!err)
			err = run_all(b, BFT_BPF_OP_MARK, BFT_BREAK_SUSPEND);
		break;
	case BFT_CMD_UNSUSPEND:
		if (cur != BFT_MODE_SUSPENDED)
			goto bad;
		err = set_mode(b, &ctl, BFT_MODE_TRACING);
		break;
	default:
		return fail(b, -EINVAL, "command %d is not a mode command", cmd);
	}
	if (!err && mode)
		*mode = ctl.mode;
	return err;
bad:
	return fail(b, -EINVAL, "not allowed while %s",
		    cur < 5 ? mode_text[cur] : "?");
}

int bft_bpf_attach(struct bft_bpf *b, uint32_t tgid,
		   const struct bft_nl_probe *probes, size_t n, int *results)
{
	int fd = session_locked(b, true), err;

	if (fd < 0)
		return fd;
	err = do_attach(b, tgid, probes, n, results);
	count_changed(b);
	session_unlock(fd);
	return err;
}

int bft_bpf_detach(struct bft_bpf *b, uint32_t tgid)
{
	int fd, err = session(b, false);

	if (err == -ENOENT)	/* no session: nothing attached */
		return tgid ? fail(b, err, "no target with tgid %u", tgid) : 0;
	if (err)
		return err;
	fd = session_lock(b);
	if (fd < 0)
		return fd;
	err = do_detach(b, tgid);
	session_unlock(fd);
	return err;
}

static void start_guard(struct bft_bpf *b, const struct bft_owner *self);

int bft_bpf_start(struct bft_bpf *b, bool persist, uint8_t *mode)
{
	struct bft_owner self;
	int fd, err;

	if (!persist && bft_owner_self(&self))
		return fail(b, -ENOENT, "/proc is needed to own a session: "
			    "start it with persist");
	fd = session_locked(b, true);
	if (fd < 0)
		return fd;
	err = do_mode_cmd(b, BFT_CMD_START, persist ? NULL : &self, mode);
	session_unlock(fd);
	if (err || persist)
		return err;
	b->own = true;
	start_guard(b, &self);
	return 0;
}

int bft_bpf_mode_cmd(struct bft_bpf *b, int cmd, uint8_t *mode)
{
	int fd, err;

	if (cmd == BFT_CMD_START)
		return bft_bpf_start(b, false, mode);
	fd = session_locked(b, true);
	if (fd < 0)
		return fd;
	err = do_mode_cmd(b, cmd, NULL, mode);
	session_unlock(fd);
	return err;
}

/* ---- status, caps, options, methods ---- */

int bft_bpf_get_caps(struct bft_bpf *b, struct bft_nl_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->proto_version = BFT_PROTO_VERSION;
	caps->features = BFT_BPF_FEATURES;
	caps->nr_cpus = b->nr_cpus;
	caps->limits.max_targets = BFT_MAX_TARGETS;
	caps->limits.max_probes = opt_desc[BFT_OPT_MAX_PROBES].max;
	caps->limits.name_max = BFT_NAME_MAX;
	caps->limits.path_max = BFT_PATH_MAX;
	caps->limits.uretprobe_depth = BFT_URETPROBE_DEPTH;
	return 0;
}

/* The pid that holds an flock on dir, from /proc/locks; 0 if unknown. */
static pid_t flock_holder(const char *dir)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	pid_t pid = 0;
	int who;
	FILE *f;

	if (stat(dir, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: FLOCK %*s %*s %d %x:%x:%lu", &who, &maj,
			   &min, &ino) == 4 && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && ino == st.st_ino)
			pid = who;
	fclose(f);
	return pid;
}

int bft_bpf_get_status(struct bft_bpf *b, struct bft_nl_status *st)
{
	size_t sz = (sizeof(struct bft_bpf_cpu) + 7) & ~(size_t)7;
	uint32_t targets[BFT_MAX_TARGETS], zero = 0;
	struct bft_bpf_ctl ctl;
	char p[PATH_MAX];
	bool reader;
	char *vals;
	int err;

	memset(st, 0, sizeof(*st));
	err = session(b, false);
	if (err == -ENOENT)
		default_ctl(&ctl);	/* none yet: an idle one */
	else if (!err)
		err = read_ctl(b, &ctl);
	if (err && err != -ENOENT)
		return err;
	vals = calloc(b->nr_cpus, sz);
	st->cpus = calloc(b->nr_cpus, sizeof(*st->cpus));
	if (!vals || !st->cpus) {
		free(vals);
		free(st->cpus);
		st->cpus = NULL;
		return -ENOMEM;
	}
	if (b->cpus_fd >= 0 && bpf_map_lookup_elem(b->cpus_fd, &zero, vals)) {
		err = fail(b, -errno, "reading the CPU state: %s",
			   strerror(errno));
		free(vals);
		free(st->cpus);
		st->cpus = NULL;
		return err;
	}
	st->mode = ctl.mode;
	st->owner = ctl.owner;
	st->nr_probes = ctl.nr_probes;
	st->nr_targets = list_targets(targets, BFT_MAX_TARGETS);
	st->nr_cpus = b->nr_cpus;
	pin_path(p, sizeof(p), "links");
	reader = flock_holder(p) != 0;
	for (uint32_t cpu = 0; cpu < b->nr_cpus; cpu++) {
		const struct bft_bpf_cpu *c = (const void *)(vals + cpu * sz);
		struct bft_nl_cpu_stats *s = &st->cpus[cpu];
		uint64_t rd = 0;

		if (b->read_fd >= 0)
			bpf_map_lookup_elem(b->read_fd, &cpu, &rd);
		s->cpu = cpu;
		/* pending: the open exit run, as in the module */
		s->produced = c->produced;
		s->written = c->written;
		s->lost = c->lost;
		s->suspended = c->suspended;
		s->bytes_written = c->bytes_written;
		s->bytes_read = rd;
		s->used = c->bytes_written > rd ? c->bytes_written - rd : 0;
		s->size = ctl.opts[BFT_OPT_BUF_SIZE];
		s->reader = reader;
		s->have = ~0u;
	}
	st->have = ~0u;
	free(vals);
	return 0;
}

/* The control map, or a new session's when there is none yet. */
static int read_ctl_or_default(struct bft_bpf *b, struct bft_bpf_ctl *ctl)
{
	int err = session(b, false);

	if (err == -ENOENT) {
		default_ctl(ctl);
		return 0;
	}
	return err ? err : read_ctl(b, ctl);
}

static void fill_opt(const struct bft_bpf_ctl *ctl, uint32_t id,
		     struct bft_nl_opt *o)
{
	o->id = id;
	o->value = ctl->opts[id];
	o->min = opt_desc[id].min;
	o->max = opt_desc[id].max;
	o->flags = opt_desc[id].flags;
}

int bft_bpf_get_opt(struct bft_bpf *b, uint32_t id, struct bft_nl_opt *out)
{
	struct bft_bpf_ctl ctl;
	int err;

	if (!id || id > BFT_OPT_MAX)
		return fail(b, -ENOENT, "unknown option %u", id);
	if (!opt_supported(id))
		return fail(b, -EOPNOTSUPP, "option %u is not supported by the "
			    "BPF backend", id);
	err = read_ctl_or_default(b, &ctl);
	if (!err)
		fill_opt(&ctl, id, out);
	return err;
}

int bft_bpf_get_opts(struct bft_bpf *b, struct bft_nl_opt *out, size_t cap,
		     size_t *n)
{
	struct bft_bpf_ctl ctl;
	int err = read_ctl_or_default(b, &ctl);

	*n = 0;
	if (err)
		return err;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		if (!opt_supported(id))
			continue;
		if (*n < cap)
			fill_opt(&ctl, id, &out[*n]);
		(*n)++;
	}
	return 0;
}

static int do_set_opt(struct bft_bpf *b, uint32_t id, uint64_t val,
		    struct bft_nl_opt *out)
{
	struct bft_bpf_ctl ctl;
	size_t probes;
	int err;

	if (!id || id > BFT_OPT_MAX)
		return fail(b, -ENOENT, "unknown option %u", id);
	if (!opt_supported(id))
		return fail(b, -EOPNOTSUPP, "option %u is not supported by the "
			    "BPF backend", id);
	if (val < opt_desc[id].min || val > opt_desc[id].max ||
	    ((opt_desc[id].flags & BFT_OPTF_POW2) && (val & (val - 1))))
		return fail(b, -ERANGE, "option %u: %llu is outside [%llu, %llu]%s",
			    id, (unsigned long long)val,
			    (unsigned long long)opt_desc[id].min,
			    (unsigned long long)opt_desc[id].max,
			    opt_desc[id].flags & BFT_OPTF_POW2 ?
			    " or not a power of 2" : "");
	err = read_ctl(b, &ctl);
	if (err)
		return err;
	probes = count_probes(b);
	if ((opt_desc[id].flags & BFT_OPTF_IDLE_ONLY) &&
	    (session_active(ctl.mode) || probes))
		return fail(b, -EBUSY, "option %u cannot change while %s", id,
			    probes ? "probes are attached" :
			    mode_text[ctl.mode < 5 ? ctl.mode : 0]);
	if (id == BFT_OPT_MAX_PROBES && val < probes)
		return fail(b, -ERANGE, "%zu probes are attached already",
			    probes);
	if (id == BFT_OPT_BUF_SIZE && val != ctl.opts[id]) {
		/* unread records would vanish: only onto drained rings */
		struct bft_nl_status st;

		err = bft_bpf_get_status(b, &st);
		if (err)
			return err;
		for (uint32_t i = 0; i < st.nr_cpus && !err; i++)
			if (st.cpus[i].used)
				err = fail(b, -EBUSY, "a ring still holds "
					   "unread records");
		bft_nl_status_free(&st);
		if (!err)
			err = make_rings(b, val);
		if (!err)
			err = reset_cpus(b, ctl.opts[BFT_OPT_TIME_RES_NS]);
		for (uint32_t cpu = 0; cpu < b->nr_cpus && !err; cpu++) {
			uint64_t zero = 0;

			bpf_map_update_elem(b->read_fd, &cpu, &zero, BPF_ANY);
		}
		if (err)
			return err;
	}
	ctl.opts[id] = val;
	err = write_ctl(b, &ctl);
	if (!err && out)
		fill_opt(&ctl, id, out);
	return err;
}

int bft_bpf_set_opt(struct bft_bpf *b, uint32_t id, uint64_t val,
		    struct bft_nl_opt *out)
{
	int fd = session_locked(b, true), err;

	if (fd < 0)
		return fd;
	err = do_set_opt(b, id, val, out);
	session_unlock(fd);
	return err;
}

int bft_bpf_get_methods(struct bft_bpf *b, bft_nl_method_cb cb, void *arg)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	uint64_t *hits = calloc(b->nr_cpus, sizeof(uint64_t));
	int ret = session(b, false);

	if (ret) {
		ret = ret == -ENOENT ? 0 : ret;	/* no session: no methods */
		goto out;
	}
	if (!m || !hits) {
		ret = -ENOMEM;
		goto out;
	}
	while (!ret && !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		struct bft_nl_method nm;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(b->methods_fd, &k, m))
			continue;
		memset(&nm, 0, sizeof(nm));
		nm.tgid = k.tgid;
		nm.method_id = k.method_id;
		nm.path = m->path;
		nm.offset = m->offset;
		nm.flags = m->flags;
		nm.name = m->name;
		if (!bpf_map_lookup_elem(hits_map(b, k.method_id),
					 &k.method_id, hits))
			for (unsigned int c = 0; c < b->nr_cpus; c++)
				nm.hits += hits[c];
		ret = cb(&nm, arg);
	}
out:
	free(m);
	free(hits);
	return ret < 0 ? ret : 0;
}

/* ---- the flush work ---- */

/*
 * Targets that exited: their links would hold the files forever.  The
 * module reaps them from its timer; here every flush and every tool that
 * opens the session does.
 */
static void reap_exited(struct bft_bpf *b)
{
	uint32_t t[BFT_MAX_TARGETS];
	size_t n = list_targets(t, BFT_MAX_TARGETS), i;
	int fd;

	/*
	 * Unpinning a dead target's links takes long (each one unregisters
	 * its uprobe: seconds for hundreds under TCG) and needs no lock: no
	 * one can attach to a dead tgid.  Only the count takes the lock,
	 * and only if it is free: a reader's flush must not wait behind an
	 * attach or a stop, which count at their end anyway; if it is
	 * taken, the next flush counts, or closing this handle.
	 */
	for (i = 0; i < n && i < BFT_MAX_TARGETS; i++)
		if (!tgid_alive(t[i]) && unpin_target(b, t[i]) != -ENOENT)
			b->count_owed = true;
	if (!b->count_owed)
		return;
	fd = open(bft_bpf_pin_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		count_changed(b);
		b->count_owed = false;
	}
	close(fd);
}

static int do_flush(struct bft_bpf *b, bool heartbeat)
{
	bool active = false;
	int err, r;

	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++) {
		r = 0;
		err = run_ctl(b, cpu, BFT_BPF_OP_SEAL, 0, &r);
		if (err)
			return err;
		if (r == 1)
			active = true;
	}
	err = run_all(b, active && heartbeat ? BFT_BPF_OP_HEARTBEAT :
		      BFT_BPF_OP_OWED, 0);
	return err;
}

int bft_bpf_flush(struct bft_bpf *b, bool heartbeat)
{
	int err = session(b, false);

	if (err)
		return err == -ENOENT ? 0 : err;
	/* a reader notices a dead owner as soon as its guard would */
	err = reap_dead_owner(b);
	if (!err)
		err = do_flush(b, heartbeat);
	if (!err)
		reap_exited(b);
	return err;
}

/* ---- owners ---- */

static void owner_of(const struct bft_bpf_ctl *ctl, struct bft_owner *o)
{
	o->tgid = ctl->owner;
	o->start = ctl->owner_start;
	o->pidns = ctl->owner_pidns;
}

static bool owned_by(const struct bft_bpf_ctl *ctl, const struct bft_owner *o)
{
	return ctl->owner && ctl->owner == o->tgid &&
	       ctl->owner_start == o->start && ctl->owner_pidns == o->pidns;
}

/* Stop the session as BFT_CMD_STOP would, if o still owns it. */
static int end_session_of(struct bft_bpf *b, const struct bft_owner *o)
{
	struct bft_bpf_ctl ctl;
	int fd = session_lock(b), err;

	if (fd < 0)
		return fd;
	err = read_ctl(b, &ctl);
	if (!err && owned_by(&ctl, o))
		err = do_mode_cmd(b, BFT_CMD_STOP, NULL, NULL);
	session_unlock(fd);
	return err;
}

/*
 * Whoever opens the session first after its owner died (the guard, or
 * any tool if the guard was killed too) ends it.
 */
static int reap_dead_owner(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;
	struct bft_owner o;
	int err = read_ctl(b, &ctl);

	if (err || !ctl.owner)
		return err;
	owner_of(&ctl, &o);
	if (bft_owner_dead(&o) != 1)
		return 0;
	err = end_session_of(b, &o);
	if (err)
		return fail(b, err, "ending the session of dead owner %u: %s",
			    o.tgid, b->err);
	return 0;
}

/* The owner's handle closes: as the module's session ends when the
 * starter's socket closes. */
static void end_own_session(struct bft_bpf *b)
{
	struct bft_owner self;

	b->own = false;
	if (b->ctl_fd >= 0 && !bft_owner_self(&self))
		end_session_of(b, &self);
}

/* In the guard: is the session still the one it guards? */
static bool guard_watching(void *arg)
{
	const struct bft_owner *o = arg;
	struct bft_bpf_ctl ctl;
	char p[PATH_MAX];
	uint32_t zero = 0;
	bool same;
	int fd;

	pin_path(p, sizeof(p), "ctl");
	fd = bpf_obj_get(p);
	if (fd < 0)
		return false;	/* unloaded */
	same = !bpf_map_lookup_elem(fd, &zero, &ctl) && owned_by(&ctl, o);
	close(fd);
	return same;
}

/* In the guard, once the owner died: opening the session ends it. */
static void guard_died(void *arg)
{
	char err[512];
	struct bft_bpf *b;
	int ret;

	(void)arg;
	for (int tries = 0; tries < 50; tries++) {
		ret = bft_bpf_open(&b, false, err, sizeof(err));
		if (!ret)
			bft_bpf_close(b);
		if (ret != -EBUSY && ret != -EAGAIN && ret != -EINTR)
			return;
		usleep(100000);	/* a CPU stayed busy: again */
	}
}

/*
 * Without a guard the session would end only when the next tool looks;
 * the guard ends it within a poll of the owner's death.  Its tgid goes
 * into the control map for status and the tests.
 */
static void start_guard(struct bft_bpf *b, const struct bft_owner *self)
{
	struct bft_owner o = *self;
	struct bft_bpf_ctl ctl;
	pid_t guard;
	int fd;

	guard = bft_owner_guard(&o, guard_watching, guard_died, &o);
	if (guard <= 0)
		return;	/* the next tool to look ends it instead */
	fd = session_lock(b);
	if (fd < 0)
		return;
	if (!read_ctl(b, &ctl) && owned_by(&ctl, &o)) {
		ctl.guard = (uint32_t)guard;
		write_ctl(b, &ctl);
	}
	session_unlock(fd);
}

int bft_bpf_get_owner(struct bft_bpf *b, pid_t *owner, pid_t *guard)
{
	struct bft_bpf_ctl ctl;
	int err = read_ctl_or_default(b, &ctl);

	*owner = err ? 0 : (pid_t)ctl.owner;
	*guard = err ? 0 : (pid_t)ctl.guard;
	return err;
}

/* ---- unloading ---- */

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
		pin_path(p, sizeof(p), pin_names[i]);
		unlink(p);
	}
	pin_path(p, sizeof(p), "links");
	rmdir(p);
	if (rmdir(bft_bpf_pin_dir()) && errno != ENOENT) {
		snprintf(err, errlen, "rmdir %s: %s", bft_bpf_pin_dir(),
			 strerror(errno));
		return -errno;
	}
	return 0;
}

/* ---- the reader ---- */

/*
 * A sample is a batch of records (user/bpf/bft.bpf.c), but a seal or a
 * thread switch publishes a few bytes alone: handing each sample to the
 * callback and storing the read position per sample (a system call) cost
 * far more than decoding it.  So a poll gathers each CPU's samples, in
 * order, and delivers them, and the position, once per CPU at its end.
 */
struct ring_ctx {
	struct bft_bpf_rings *r;
	unsigned int cpu;
	uint64_t bytes;
	uint64_t bytes_stored;	/* what the bft_read map says */
	struct bft_buf pend;	/* gathered, not yet delivered */
	int fd;			/* the ring's map, in the wakeup set */
	/* the kernel's consumer and producer positions, a page each */
	const volatile uint64_t *pos;
	uint64_t size;
};

/*
 * The programs wake a reader only when a ring crosses its watermark and
 * when the flush work seals (user/bpf/bft.bpf.c, wake_flag()), so a read
 * takes every ring, woken or not.  The rings are in two epoll sets:
 * libbpf's, level-triggered, which ring_buffer__consume() does not use,
 * and @wake_fd, edge-triggered, which becomes readable at a wakeup only:
 * a ring holding a few bytes does not keep a poller spinning.
 */
struct bft_bpf_rings {
	struct bft_bpf *b;
	int lock_fd;		/* the reader's lock, on the links directory */
	struct ring_buffer *rb;
	bft_rings_cb cb;
	void *arg;
	struct ring_ctx *cpus;
	ssize_t got;
	int cb_ret;
	int wake_fd;
	size_t page;
	uint64_t watermark;	/* the session's, as of the last pass */
};

static int on_sample(void *ctx, void *data, size_t len)
{
	struct ring_ctx *c = ctx;
	struct bft_bpf_rings *r = c->r;

	if (r->cb && bft_buf_append(&c->pend, data, len)) {
		r->cb_ret = -ENOMEM;
		return r->cb_ret;
	}
	c->bytes += len;
	r->got += len;
	return 0;
}

/* A CPU's pass brought at most this much: delivered before the others. */
#define DELIVER_FIRST	4096

/*
 * Hand every CPU's gathered bytes to the callback, the CPUs with little
 * first: an idle CPU's flush SYNC moves its stream's time, and only then
 * can a merge let a busy CPU's records through while they are still
 * being fed (the collector's ring callback).  Store the positions.
 */
static int deliver(struct bft_bpf_rings *r)
{
	for (int big = 0; big <= 1; big++) {
		for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
			struct ring_ctx *c = &r->cpus[cpu];
			int ret;

			if (!big && c->bytes != c->bytes_stored) {
				bpf_map_update_elem(r->b->read_fd, &c->cpu,
						    &c->bytes, BPF_ANY);
				c->bytes_stored = c->bytes;
			}
			if (!c->pend.len || (c->pend.len > DELIVER_FIRST) != big)
				continue;
			ret = r->cb(cpu, c->pend.data, c->pend.len, r->arg);
			c->pend.len = 0;
			if (ret)
				return ret < 0 ? ret : -ECANCELED;
		}
	}
	return 0;
}

/* Rings woken since the last look, after waiting up to timeout_ms. */
static int take_wakeups(struct bft_bpf_rings *r, int timeout_ms)
{
	struct epoll_event ev[16];
	int n, woken = 0;

	do {
		n = epoll_wait(r->wake_fd, ev, (int)(sizeof(ev) / sizeof(ev[0])),
			       timeout_ms);
		if (n < 0)
			return errno == EINTR ? woken : -errno;
		woken += n;
		timeout_ms = 0;
	} while (n == (int)(sizeof(ev) / sizeof(ev[0])));
	return woken;
}

/* One pass over every ring, after waiting for a wakeup, then delivery. */
static int rings_pass(struct bft_bpf_rings *r, int timeout_ms)
{
	struct bft_bpf_ctl ctl;
	int err, ret;

	r->got = 0;
	r->cb_ret = 0;
	/* one lookup a pass keeps bft_bpf_rings_behind() system-call free */
	if (!read_ctl(r->b, &ctl))
		r->watermark = ctl.watermark;
	if (timeout_ms && bft_bpf_rings_behind(r))
		timeout_ms = 0;
	err = take_wakeups(r, timeout_ms);
	if (err >= 0)
		err = ring_buffer__consume(r->rb);
	ret = deliver(r);
	if (r->cb_ret)
		return r->cb_ret;
	if (ret)
		return ret;
	return err < 0 ? err : 0;
}

/*
 * A ring into the wakeup set, and its positions mapped read-only (the
 * first two pages of the map: the consumer's, then the producer's) so
 * that its fill costs no system call.
 */
static int watch_ring(struct bft_bpf_rings *r, struct ring_ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u32 = c->cpu };
	struct bpf_map_info info = { 0 };
	uint32_t len = sizeof(info);
	void *pos;

	if (bpf_obj_get_info_by_fd(c->fd, &info, &len))
		return fail(r->b, -errno, "the ring of CPU %u: %s", c->cpu,
			    strerror(errno));
	c->size = info.max_entries;
	pos = mmap(NULL, 2 * r->page, PROT_READ, MAP_SHARED, c->fd, 0);
	if (pos == MAP_FAILED)
		return fail(r->b, -errno, "mapping the ring of CPU %u: %s",
			    c->cpu, strerror(errno));
	c->pos = pos;
	if (epoll_ctl(r->wake_fd, EPOLL_CTL_ADD, c->fd, &ev))
		return fail(r->b, -errno, "watching the ring of CPU %u: %s",
			    c->cpu, strerror(errno));
	return 0;
}

/*
 * One reader at a time, as the module binds each ring to one file: two
 * readers would each take part of the records and see gaps.  The lock is
 * an flock on the session's links directory (the session lock is on the
 * pin directory itself), so it goes with the reader, however it ends.
 */
static int reader_lock(struct bft_bpf *b)
{
	char p[PATH_MAX];
	pid_t holder;
	int fd;

	pin_path(p, sizeof(p), "links");
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fail(b, -errno, "%s: %s", p, strerror(errno));
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	if (errno != EWOULDBLOCK) {
		int err = -errno;

		close(fd);
		return fail(b, err, "locking %s: %s", p, strerror(-err));
	}
	close(fd);
	holder = flock_holder(p);
	if (holder)
		return fail(b, -EBUSY, "process %d (%s) already reads this session's rings: one reader at a time (bfctl record or bfcollector)",
			    (int)holder, bft_bpf_pin_dir());
	return fail(b, -EBUSY, "another process already reads this session's rings (%s): one reader at a time (bfctl record or bfcollector)",
		    bft_bpf_pin_dir());
}

int bft_bpf_rings_open(struct bft_bpf *b, struct bft_bpf_rings **rp,
		       bft_rings_cb cb, void *arg)
{
	struct bft_bpf_rings *r = calloc(1, sizeof(*r));
	int err = 0;

	*rp = NULL;
	if (!r)
		return -ENOMEM;
	err = session(b, true);	/* the first reader makes it, as with the module */
	if (err) {
		free(r);
		return err;
	}
	r->lock_fd = reader_lock(b);
	if (r->lock_fd < 0) {
		err = r->lock_fd;
		free(r);
		return err;
	}
	r->b = b;
	r->cb = cb;
	r->arg = arg;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->cpus = calloc(b->nr_cpus, sizeof(*r->cpus));
	if (!r->cpus) {
		close(r->lock_fd);
		free(r);
		return -ENOMEM;
	}
	for (unsigned int cpu = 0; cpu < b->nr_cpus; cpu++)
		r->cpus[cpu].fd = -1;
	r->wake_fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->wake_fd < 0) {
		err = fail(b, -errno, "epoll_create1: %s", strerror(errno));
		bft_bpf_rings_close(r);
		return err;
	}
	for (unsigned int cpu = 0; cpu < b->nr_cpus && !err; cpu++) {
		uint32_t id = 0;
		uint64_t rd = 0;
		int fd;

		r->cpus[cpu] = (struct ring_ctx){ .r = r, .cpu = cpu };
		/* bytes an earlier reader took count as read already */
		if (!bpf_map_lookup_elem(b->read_fd, &cpu, &rd))
			r->cpus[cpu].bytes = rd;
		r->cpus[cpu].bytes_stored = r->cpus[cpu].bytes;
		if (bpf_map_lookup_elem(b->rings_fd, &cpu, &id)) {
			err = fail(b, -errno, "the ring of CPU %u: %s", cpu,
				   strerror(errno));
			break;
		}
		fd = bpf_map_get_fd_by_id(id);
		if (fd < 0) {
			err = fail(b, -errno, "the ring of CPU %u: %s", cpu,
				   strerror(errno));
			break;
		}
		r->cpus[cpu].fd = fd;
		if (!r->rb) {
			r->rb = ring_buffer__new(fd, on_sample, &r->cpus[cpu],
						 NULL);
			if (!r->rb)
				err = fail(b, -errno, "ring_buffer__new: %s",
					   strerror(errno));
		} else if (ring_buffer__add(r->rb, fd, on_sample,
					    &r->cpus[cpu])) {
			err = fail(b, -errno, "ring_buffer__add: %s",
				   strerror(errno));
		}
		if (!err)
			err = watch_ring(r, &r->cpus[cpu]);
	}
	if (err) {
		bft_bpf_rings_close(r);
		return err;
	}
	*rp = r;
	return 0;
}

void bft_bpf_rings_close(struct bft_bpf_rings *r)
{
	if (!r)
		return;
	ring_buffer__free(r->rb);
	for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
		struct ring_ctx *c = &r->cpus[cpu];

		bft_buf_free(&c->pend);
		if (c->pos)
			munmap((void *)c->pos, 2 * r->page);
		if (c->fd >= 0)
			close(c->fd);
	}
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	close(r->lock_fd);
	free(r->cpus);
	free(r);
}

int bft_bpf_rings_fd(const struct bft_bpf_rings *r)
{
	return r->wake_fd;
}

int bft_bpf_rings_woken(struct bft_bpf_rings *r)
{
	return take_wakeups(r, 0);
}

/*
 * A ring's programs wake the reader when a record makes it cross the
 * watermark.  One that still holds the watermark's worth after a read
 * (the reader fell behind a fast producer) never crosses it again, so no
 * wakeup comes until the next flush, and a fast producer fills the rest
 * before then: such a ring must be read again now, as must one half
 * full (the watermark is not known before the first pass).
 */
bool bft_bpf_rings_behind(const struct bft_bpf_rings *r)
{
	for (unsigned int cpu = 0; cpu < r->b->nr_cpus; cpu++) {
		const struct ring_ctx *c = &r->cpus[cpu];
		uint64_t cons, prod, at = c->size / 2;

		if (!c->pos)
			continue;
		cons = __atomic_load_n(&c->pos[0], __ATOMIC_ACQUIRE);
		prod = __atomic_load_n(&c->pos[r->page / 8], __ATOMIC_ACQUIRE);
		if (r->watermark && r->watermark < at)
			at = r->watermark;
		if (prod - cons >= at)
			return true;
	}
	return false;
}

uint64_t bft_bpf_rings_bytes_read(const struct bft_bpf_rings *r,
				  unsigned int cpu)
{
	return cpu < r->b->nr_cpus ? r->cpus[cpu].bytes : 0;
}

ssize_t bft_bpf_rings_poll(struct bft_bpf_rings *r, int timeout_ms)
{
	int err = rings_pass(r, timeout_ms);

	if (err < 0 && err != -EINTR)
		return err;
	return r->got;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ssize_t bft_bpf_rings_drain(struct bft_bpf_rings *r, int quiet_ms, int max_ms)
{
	uint64_t start = now_ms(), last = start;
	ssize_t total = 0, got;
	int err;

	for (;;) {
		err = bft_bpf_flush(r->b, false);
		if (err)
			return err;
		err = rings_pass(r, 0);
		if (err < 0)
			return err;
		got = r->got;
		total += got;
		if (got)
			last = now_ms();
		else if (now_ms() - last >= (uint64_t)quiet_ms)
			return total;
		if (max_ms >= 0 && now_ms() - start >= (uint64_t)max_ms)
			return -ETIME;
		if (!got) {
			got = bft_bpf_rings_poll(r, 10);
			if (got < 0)
				return got;
			total += got;
			if (got)
				last = now_ms();
		}
	}
}
