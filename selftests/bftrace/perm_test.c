// SPDX-License-Identifier: GPL-2.0
/*
 * The permission model (include/uapi/linux/bftrace.h, docs/kernel-module.md
 * "Security model"):
 *   - every command that reveals or changes anything needs CAP_PERFMON or
 *     CAP_SYS_ADMIN in the initial user namespace, and says so in its
 *     extack text; only GET_CAPS and GET_OPT are open;
 *   - the events group needs CAP_SYS_ADMIN;
 *   - attaching needs ptrace access to the target (ptrace policy, Yama);
 *   - pause never stops PID 1 or the caller itself.
 */
#include <errno.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define SPIN_METHOD	31
#define NOBODY		65534
#define ESCAPE		"/tmp/bft-perm-escape"

FIXTURE(perm) {
	struct bst_session s;
	struct bst_proc target;
	struct bft_nl_probe probe;
	char *exe;
};

FIXTURE_SETUP(perm)
{
	struct bst_fn fn;

	ASSERT_EQ(0, bst_session_open(&self->s));
	self->exe = bst_target_path("spinner");
	ASSERT_NE(NULL, self->exe);
	fn = (struct bst_fn){ self->exe, SPIN_FN, SPIN_METHOD };
	ASSERT_EQ(0, bst_resolve(&fn, 1, &self->probe));
}

FIXTURE_TEARDOWN(perm)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	free(self->exe);
}

enum who { NOBODY_USER, USERNS_ROOT, PERFMON_NOBODY };

static int become(enum who who)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };
	int rootfd;
	FILE *f;

	switch (who) {
	case NOBODY_USER:
		return setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		       setresuid(NOBODY, NOBODY, NOBODY) ? -errno : 0;
	case USERNS_ROOT:
		/*
		 * The kernel refuses a user namespace to a chrooted process,
		 * and the test guest runs its command in a chroot.  Root
		 * leaves a chroot (chroot below it, walk up), takes the
		 * namespace, and goes back; outside a chroot, a no-op.
		 */
		rootfd = open("/", O_RDONLY | O_DIRECTORY);
		if (rootfd < 0 || (mkdir(ESCAPE, 0700) && errno != EEXIST) ||
		    chroot(ESCAPE) || fchdir(rootfd))
			return -errno;
		for (int i = 0; i < 64; i++)
			if (chdir(".."))
				return -errno;
		if (chroot("."))
			return -errno;
		/* what unshare -U -r does: root, but of a new namespace only */
		if (unshare(CLONE_NEWUSER) || fchdir(rootfd) || chroot(".") ||
		    chdir("/"))
			return -errno;
		close(rootfd);
		f = fopen("/proc/self/uid_map", "w");
		if (!f)
			return -errno;
		fprintf(f, "0 0 1\n");
		return fclose(f) ? -errno : 0;
	case PERFMON_NOBODY:
		if (prctl(PR_SET_KEEPCAPS, 1) || setgroups(0, NULL) ||
		    setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			return -errno;
		d[CAP_PERFMON / 32].effective = 1u << (CAP_PERFMON % 32);
		d[CAP_PERFMON / 32].permitted = 1u << (CAP_PERFMON % 32);
		return syscall(SYS_capset, &h, d) ? -errno : 0;
	}
	return -EINVAL;
}

struct res {
	int err;
	bool extack;		/* msg is the kernel's text */
	char msg[200];
};

enum {
	R_BECOME, R_STATUS, R_METHODS, R_EXCEPTIONS, R_ATTACH, R_DETACH, R_DETACH_ALL,
	R_START, R_STOP, R_PAUSE, R_UNPAUSE, R_SUSPEND, R_UNSUSPEND, R_SET_OPT,
	R_EVENTS, R_CAPS, R_GET_OPT, R_N,
};

static const char *const r_names[R_N] = {
	"become", "status", "methods", "exceptions", "attach", "detach", "detach all",
	"start", "stop", "pause", "unpause", "suspend", "unsuspend", "set_opt",
	"events group", "get_caps", "get_opt",
};

static int count_cb(const struct bft_nl_method *m, void *arg)
{
	(void)m;
	(*(int *)arg)++;
	return 0;
}

static int count_exc(const struct bft_nl_exception *e, void *arg)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

static void note(struct res *r, struct bft_nl *nl, int err)
{
	r->err = err;
	r->extack = err && nl && bft_nl_err_is_extack(nl);
	snprintf(r->msg, sizeof(r->msg), "%s", err && nl ? bft_nl_errmsg(nl) : "");
}

/* In a child: every command as @who, results into @r. */
static void try_all(enum who who, pid_t tgid, const struct bft_nl_probe *p,
		    struct res *r)
{
	static const int modes[] = {
		BFT_CMD_STOP, BFT_CMD_PAUSE, BFT_CMD_UNPAUSE, BFT_CMD_SUSPEND,
		BFT_CMD_UNSUSPEND,
	};
	struct bft_nl_status st;
	struct bft_nl_caps caps;
	struct bft_nl_opt opt;
	struct bft_nl *nl, *ev = NULL;
	int n = 0;

	note(&r[R_BECOME], NULL, become(who));
	if (r[R_BECOME].err)
		return;
	if (bft_nl_open(&nl, r[R_BECOME].msg, sizeof(r[R_BECOME].msg))) {
		r[R_BECOME].err = -ENOTCONN;
		return;
	}
	note(&r[R_STATUS], nl, bft_nl_get_status(nl, &st));
	if (!r[R_STATUS].err)
		bft_nl_status_free(&st);
	note(&r[R_METHODS], nl, bft_nl_get_methods(nl, count_cb, &n));
	note(&r[R_EXCEPTIONS], nl, bft_nl_get_exceptions(nl, count_exc, &n));
	note(&r[R_ATTACH], nl, bft_nl_attach(nl, (uint32_t)tgid, p, 1, NULL));
	note(&r[R_DETACH], nl, bft_nl_detach(nl, (uint32_t)tgid));
	note(&r[R_DETACH_ALL], nl, bft_nl_detach(nl, 0));
	note(&r[R_START], nl, bft_nl_start(nl, true, NULL));
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
		note(&r[R_STOP + i], nl, bft_nl_mode_cmd(nl, modes[i], NULL));
	note(&r[R_SET_OPT], nl, bft_nl_set_opt(nl, BFT_OPT_FLUSH_MS, 50, NULL));
	r[R_EVENTS].err = bft_nl_open_events(&ev, r[R_EVENTS].msg,
					     sizeof(r[R_EVENTS].msg));
	if (ev)
		bft_nl_close(ev);
	note(&r[R_CAPS], nl, bft_nl_get_caps(nl, &caps));
	note(&r[R_GET_OPT], nl, bft_nl_get_opt(nl, BFT_OPT_FLUSH_MS, &opt));
	bft_nl_close(nl);
}

static struct res *run_as(enum who who, pid_t tgid,
			  const struct bft_nl_probe *p)
{
	struct res *r = mmap(NULL, R_N * sizeof(*r), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (r == MAP_FAILED)
		return NULL;
	for (int i = 0; i < R_N; i++)
		r[i].err = -EINPROGRESS;
	pid = fork();
	if (pid == 0) {
		try_all(who, tgid, p, r);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
		munmap(r, R_N * sizeof(*r));
		return NULL;
	}
	return r;
}

static const char *release(void)
{
	static struct utsname u;

	return uname(&u) ? "?" : u.release;
}

/* Tracing the spinner as root; then every command as @who. */
static void everything_refused(struct __test_metadata *_metadata,
			       FIXTURE_DATA(perm) *self, enum who who)
{
	uint64_t flush = self->s.opts[BFT_OPT_FLUSH_MS].value;
	struct bft_nl_status st;
	struct bft_nl_opt opt;
	struct res *r;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, NULL,
					SPIN_METHOD, true));
	r = run_as(who, self->target.pid, &self->probe);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, r[R_BECOME].err) TH_LOG("%s", r[R_BECOME].msg);
	for (int i = R_STATUS; i <= R_SET_OPT; i++) {
		EXPECT_EQ(-EPERM, r[i].err)
			TH_LOG("%s: %s (%s)", r_names[i], strerror(-r[i].err),
			       r[i].msg);
		/*
		 * The dumps too, on 6.1 as well, whose dump start has no
		 * extack: there the text comes with NLMSG_DONE.
		 */
		EXPECT_TRUE(r[i].extack)
			TH_LOG("%s: no extack text on %s", r_names[i], release());
		EXPECT_NE(NULL, strstr(r[i].msg, "CAP_PERFMON"))
			TH_LOG("%s: extack text '%s'", r_names[i], r[i].msg);
	}
	EXPECT_EQ(-EPERM, r[R_EVENTS].err)
		TH_LOG("events group: %s (%s)", strerror(-r[R_EVENTS].err),
		       r[R_EVENTS].msg);
	EXPECT_EQ(0, r[R_CAPS].err) TH_LOG("get_caps: %s", r[R_CAPS].msg);
	EXPECT_EQ(0, r[R_GET_OPT].err) TH_LOG("get_opt: %s", r[R_GET_OPT].msg);
	munmap(r, R_N * sizeof(*r));

	/* and nothing changed */
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
	ASSERT_EQ(0, bft_nl_get_opt(self->s.nl, BFT_OPT_FLUSH_MS, &opt));
	EXPECT_EQ(flush, opt.value);
}

TEST_F_TIMEOUT(perm, unprivileged_user_is_refused_everything, 60)
{
	everything_refused(_metadata, self, NOBODY_USER);
}

TEST_F_TIMEOUT(perm, root_of_a_user_namespace_is_refused_everything, 60)
{
	everything_refused(_metadata, self, USERNS_ROOT);
}

/* CAP_PERFMON is enough to read, but not to attach to root's process. */
TEST_F_TIMEOUT(perm, perfmon_needs_ptrace_access_to_attach, 60)
{
	struct res *r;

	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", NULL, false, 10000));
	r = run_as(PERFMON_NOBODY, self->target.pid, &self->probe);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0, r[R_BECOME].err) TH_LOG("%s", r[R_BECOME].msg);
	EXPECT_EQ(0, r[R_STATUS].err) TH_LOG("status: %s", r[R_STATUS].msg);
	EXPECT_EQ(0, r[R_METHODS].err) TH_LOG("methods: %s", r[R_METHODS].msg);
	EXPECT_EQ(-EPERM, r[R_ATTACH].err)
		TH_LOG("attach: %s (%s)", strerror(-r[R_ATTACH].err),
		       r[R_ATTACH].msg);
	EXPECT_TRUE(r[R_ATTACH].extack) TH_LOG("attach: no kernel text");
	EXPECT_NE(NULL, strstr(r[R_ATTACH].msg, "ptrace"))
		TH_LOG("attach: extack text '%s'", r[R_ATTACH].msg);
	munmap(r, R_N * sizeof(*r));
}

/*
 * BFT_IOC_STATUS as @who: on @fd (opened by the parent), or, if @fd is
 * -1, on a file @who opens itself.  0, the errno, or 200 + step.
 */
static int status_ioctl_as(enum who who, int fd)
{
	struct bft_ioc_status q = { 0 };
	pid_t pid = fork();
	int ws;

	if (pid == 0) {
		if (become(who))
			_exit(201);
		if (fd < 0)
			fd = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(202);
		_exit(ioctl(fd, BFT_IOC_STATUS, &q) ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
		return 255;
	return WEXITSTATUS(ws);
}

/* A file nobody opened, in a privileged process (pidfd_getfd()). */
static int fd_opened_by_nobody(pid_t *child)
{
	int p[2], fd = -1, pidfd;

	if (pipe(p))
		return -errno;
	*child = fork();
	if (*child == 0) {
		close(p[0]);
		if (become(NOBODY_USER))
			_exit(1);
		fd = open("/dev/" BFT_DEV_NAME, O_RDONLY);
		if (fd < 0 || write(p[1], &fd, sizeof(fd)) != sizeof(fd))
			_exit(2);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (*child < 0 || read(p[0], &fd, sizeof(fd)) != sizeof(fd)) {
		close(p[0]);
		return -EIO;
	}
	close(p[0]);
	pidfd = syscall(SYS_pidfd_open, *child, 0);
	if (pidfd < 0)
		return -errno;
	fd = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (fd < 0)
		fd = -errno;
	close(pidfd);
	return fd;
}

/*
 * The ioctl's status is GET_STATUS's: the opener of the file and the
 * caller both need CAP_PERFMON or CAP_SYS_ADMIN.  The device is root's
 * 0600; made 0666 here to show the ioctl checks on its own.
 */
TEST_F_TIMEOUT(perm, status_ioctl_needs_the_same_privilege, 60)
{
	const char *dev = "/dev/" BFT_DEV_NAME;
	struct bft_ioc_status q = { 0 };
	struct stat sb;
	pid_t child = -1;
	int fd, theirs;

	ASSERT_EQ(0, bst_spinner_traced(&self->s, &self->target, NULL,
					SPIN_METHOD, true));
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, BFT_IOC_STATUS, &q));
	EXPECT_EQ(1, q.nr_probes);
	/* root's file, asked by an unprivileged process */
	EXPECT_EQ(EPERM, status_ioctl_as(NOBODY_USER, fd));
	EXPECT_EQ(EPERM, status_ioctl_as(USERNS_ROOT, fd));
	EXPECT_EQ(0, status_ioctl_as(PERFMON_NOBODY, fd));
	close(fd);

	ASSERT_EQ(0, stat(dev, &sb));
	ASSERT_EQ(0, chmod(dev, 0666));
	/* their own file */
	EXPECT_EQ(EPERM, status_ioctl_as(NOBODY_USER, -1));
	EXPECT_EQ(0, status_ioctl_as(PERFMON_NOBODY, -1));
	/* an unprivileged opener's file, asked by root */
	theirs = fd_opened_by_nobody(&child);
	EXPECT_LE(0, theirs) TH_LOG("%s", strerror(-theirs));
	if (theirs >= 0) {
		EXPECT_EQ(-1, ioctl(theirs, BFT_IOC_STATUS, &q));
		EXPECT_EQ(EPERM, errno);
		close(theirs);
	}
	EXPECT_EQ(0, chmod(dev, sb.st_mode & 07777));
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

static void pause_refused(struct __test_metadata *_metadata,
			  FIXTURE_DATA(perm) *self, pid_t tgid,
			  const char *why)
{
	struct bft_nl_status st;
	int err;

	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)tgid, &self->probe, 1,
				   NULL)) TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bst_start(&self->s, false));
	err = bft_nl_mode_cmd(self->s.nl, BFT_CMD_PAUSE, NULL);
	EXPECT_EQ(-EPERM, err) TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	EXPECT_NE(NULL, strstr(bft_nl_errmsg(self->s.nl), why))
		TH_LOG("extack text '%s'", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	bft_nl_status_free(&st);
}

/* The probe sits in the spinner's file, which init never runs. */
TEST_F_TIMEOUT(perm, pause_never_stops_pid_1, 60)
{
	pause_refused(_metadata, self, 1, "PID 1");
}

TEST_F_TIMEOUT(perm, pause_never_stops_the_caller, 60)
{
	pause_refused(_metadata, self, getpid(), "caller itself");
}

TEST_HARNESS_MAIN
