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
#include <linux/netlink.h>
#include <sys/socket.h>

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
			_exit(errno);
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
	/* an unprivileged opener gets no file to hand over at all */
	theirs = fd_opened_by_nobody(&child);
	EXPECT_EQ(-EIO, theirs);
	if (theirs >= 0)
		close(theirs);
	EXPECT_EQ(0, chmod(dev, sb.st_mode & 07777));
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}

/* open() of the device as @who: 0 or the errno (200+: a step failed). */
static int dev_open_as(enum who who)
{
	pid_t pid = fork();
	int ws, fd;

	if (pid == 0) {
		if (become(who))
			_exit(201);
		fd = open("/dev/" BFT_DEV_NAME, O_RDONLY | O_CLOEXEC);
		_exit(fd < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws))
		return 255;
	return WEXITSTATUS(ws);
}

/*
 * The rings hold every target's calls: the file's mode alone must not
 * give them away.  Made 0666 here; only a privileged opener gets a file.
 */
TEST_F_TIMEOUT(perm, dev_open_needs_privilege_whatever_the_mode, 60)
{
	const char *dev = "/dev/" BFT_DEV_NAME;
	struct stat sb;

	ASSERT_EQ(0, stat(dev, &sb));
	ASSERT_EQ(0, chmod(dev, 0666));
	EXPECT_EQ(EPERM, dev_open_as(NOBODY_USER));
	EXPECT_EQ(EPERM, dev_open_as(USERNS_ROOT));
	EXPECT_EQ(0, dev_open_as(PERFMON_NOBODY));
	EXPECT_EQ(0, chmod(dev, sb.st_mode & 07777));
}

/* Each of @cmds as @who on its own socket: 0 or -errno into res[]. */
static void control_as(enum who who, const int *cmds, int n, pid_t tgid,
		       int *res)
{
	struct bft_nl *nl;
	pid_t pid = fork();

	if (pid == 0) {
		if (become(who) || bft_nl_open(&nl, NULL, 0))
			_exit(1);
		for (int i = 0; i < n; i++)
			res[i] = cmds[i] == BFT_CMD_DETACH ?
				 bft_nl_detach(nl, (uint32_t)tgid) :
				 bft_nl_mode_cmd(nl, cmds[i], NULL);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/*
 * A target whose main thread exited: its /proc/PID/mem opens with no
 * ptrace check (the leader has no mm).  A caller with CAP_PERFMON but no
 * ptrace rights over root's process must still not pause, detach or stop
 * it.
 */
TEST_F_TIMEOUT(perm, control_of_a_leaderless_target_needs_ptrace_access, 60)
{
	static const char *const args[] = { "-t", "2", "-d", "1000", "-L", NULL };
	static const int cmds[] = { BFT_CMD_PAUSE, BFT_CMD_DETACH, BFT_CMD_STOP };
	struct bft_nl_status st;
	char states[16];
	size_t n = 0;
	int *res;

	res = mmap(NULL, sizeof(cmds), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	for (int i = 0; i < 3; i++)
		res[i] = -EINPROGRESS;
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", args, false,
				    10000));
	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   &self->probe, 1, NULL))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	ASSERT_EQ(0, bst_start(&self->s, false));
	ASSERT_EQ(0, bst_proc_send(&self->target, 'L'));
	/* the leader is a zombie once only the other thread runs */
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, bst_thread_states(self->target.pid, states,
					       sizeof(states), &n));
		if (n == 2 && states[0] == 'Z')
			break;
		bst_sleep_ms(20);
	}
	ASSERT_EQ('Z', states[0]) TH_LOG("thread states %.*s", (int)n, states);
	control_as(PERFMON_NOBODY, cmds, 3, self->target.pid, res);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(-EPERM, res[i]) TH_LOG("%s: %s", bft_cmd_name(cmds[i]),
						 strerror(-res[i]));
	}
	EXPECT_FALSE(bst_any_stopped(self->target.pid));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(BFT_MODE_TRACING, st.mode);
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
	munmap(res, sizeof(cmds));
}

/*
 * A socket that joined the events group's id while no family owned it
 * (before the module registered) was never checked by the core: the
 * module must not send it events.  A root socket that joins afterwards
 * still gets them.
 */
static int join_group(int grp)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (fd < 0)
		return -errno;
	/* a port id of 0 is the sender's own: broadcasts skip it */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &grp,
		       sizeof(grp))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Messages queued on @fd (netlink delivers a broadcast at once). */
static int queued(int fd)
{
	char buf[8192];
	int n = 0;

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		n++;
	return n;
}

TEST_F_TIMEOUT(perm, events_joined_before_the_module_are_not_sent, 90)
{
	int grp = (int)bft_nl_events_group_id(self->s.nl), fd, late;
	int ready[2], go[2], ws;
	struct bst_session s2 = { 0 };
	pid_t child;
	char c = 0;

	ASSERT_LT(0, grp);
	bst_session_close(&self->s);
	ASSERT_EQ(0, bst_rmmod());
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	child = fork();
	if (child == 0) {
		/* nobody joins the id nobody owns, then counts what came */
		if (become(NOBODY_USER))
			_exit(201);
		fd = join_group(grp);
		c = fd < 0 ? 'n' : 'y';
		if (write(ready[1], &c, 1) != 1 || fd < 0)
			_exit(202);
		if (read(go[0], &c, 1) != 1)
			_exit(203);
		_exit(queued(fd) ? 1 : 0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ('y', c);
	ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	ASSERT_EQ(0, bst_session_open(&s2));
	if ((int)bft_nl_events_group_id(s2.nl) != grp) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		bst_session_close(&s2);
		ASSERT_EQ(0, bst_session_open(&self->s));
		SKIP(return, "the group got another id after reload");
	}
	late = join_group(grp);
	ASSERT_LE(0, late) TH_LOG("root joins: %s", strerror(-late));
	/* two mode events */
	ASSERT_EQ(0, bst_start(&s2, true));
	ASSERT_EQ(0, bst_mode(&s2, BFT_CMD_STOP));
	/*
	 * A kernel that filters a broadcast sends to the late, privileged
	 * member only; one that cannot withholds every event, and its
	 * capabilities stop offering them.
	 */
	if (s2.caps.features & BFT_FEAT_EVENTS) {
		EXPECT_LT(0, queued(late));
	} else {
		EXPECT_EQ(0, queued(late));
	}
	close(late);
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(child, waitpid(child, &ws, 0));
	ASSERT_TRUE(WIFEXITED(ws));
	EXPECT_EQ(0, WEXITSTATUS(ws)) TH_LOG("the early member got events");
	bst_session_close(&s2);
	ASSERT_EQ(0, bst_session_open(&self->s));
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
