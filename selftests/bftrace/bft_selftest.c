// SPDX-License-Identifier: GPL-2.0
/*
 * bft_selftest: helpers shared by the bftrace selftests (see the header).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bft_calltree.h"
#include "bft_elf.h"
#include "bft_merge.h"
#include "bft_rings.h"
#include "bft_selftest.h"

#define LOG(...) fprintf(stderr, "# " __VA_ARGS__)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

uint64_t bst_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bst_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- targets ----------------------------------------------------------- */

char *bst_target_path(const char *name)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash, *path;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	if (asprintf(&path, "%s/targets/%s", exe, name) < 0)
		return NULL;
	return path;
}

static void child_exec(const char *path, const char *const *argv, int in_r,
		       int out_w, int shm_fd)
{
	const char *args[16] = { path };
	size_t i;

	/* The target must not outlive a test that dies. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(in_r, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0)
		_exit(127);
	if (shm_fd >= 0) {
		if (shm_fd == SPIN_SHM_FD)
			fcntl(SPIN_SHM_FD, F_SETFD, 0);
		else if (dup2(shm_fd, SPIN_SHM_FD) < 0)
			_exit(127);
	}
	for (i = 0; argv && argv[i] && i + 2 < ARRAY_SIZE(args); i++)
		args[i + 1] = argv[i];
	args[i + 1] = NULL;
	execv(path, (char *const *)args);
	fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
	_exit(127);
}

int bst_proc_start(struct bst_proc *p, const char *name,
		   const char *const *argv, bool with_shm, int timeout_ms)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, shm_fd = -1, err;
	char *path = bst_target_path(name);

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	if (!path)
		return -ENOMEM;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	if (with_shm) {
		shm_fd = memfd_create("bft-spin", MFD_CLOEXEC);
		if (shm_fd < 0 || ftruncate(shm_fd, sizeof(struct spin_shm))) {
			err = -errno;
			goto fail;
		}
		p->shm = mmap(NULL, sizeof(struct spin_shm),
			      PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd, 0);
		if (p->shm == MAP_FAILED) {
			p->shm = NULL;
			err = -errno;
			goto fail;
		}
	}
	p->pid = fork();
	if (p->pid < 0) {
		err = -errno;
		p->pid = 0;
		goto fail;
	}
	if (p->pid == 0)
		child_exec(path, argv, in[0], out[1], shm_fd);
	close(in[0]);
	close(out[1]);
	if (shm_fd >= 0)
		close(shm_fd);
	p->in_fd = in[1];
	p->out_fd = out[0];
	/* A target killed by SIGPIPE would hide the real failure. */
	signal(SIGPIPE, SIG_IGN);
	free(path);
	err = bst_proc_wait_line(p, "ready", timeout_ms);
	if (err) {
		LOG("target %s did not get ready: %s\n", name, strerror(-err));
		bst_proc_kill(p);
	}
	return err;
fail:
	LOG("starting target %s: %s\n", name, strerror(-err));
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (shm_fd >= 0)
		close(shm_fd);
	if (p->shm)
		munmap(p->shm, sizeof(struct spin_shm));
	p->shm = NULL;
	free(path);
	return err;
}

int bst_proc_send(struct bst_proc *p, char c)
{
	if (p->in_fd < 0)
		return -EBADF;
	return write(p->in_fd, &c, 1) == 1 ? 0 : -errno;
}

int bst_proc_wait_line(struct bst_proc *p, const char *want, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		char *nl = memchr(p->line, '\n', p->line_len);

		if (nl) {
			size_t len = (size_t)(nl - p->line);
			bool match = len == strlen(want) &&
				     !memcmp(p->line, want, len);

			p->line_len -= len + 1;
			memmove(p->line, nl + 1, p->line_len);
			if (match)
				return 0;
			continue;
		}
		if (p->line_len == sizeof(p->line))
			p->line_len = 0;	/* an absurd line: drop it */

		uint64_t now = bst_now_ns();
		struct pollfd pfd = { .fd = p->out_fd, .events = POLLIN };
		int r;
		ssize_t n;

		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = read(p->out_fd, p->line + p->line_len,
			 sizeof(p->line) - p->line_len);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p->line_len += (size_t)n;
	}
}

int bst_proc_wait_exit(struct bst_proc *p, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;

	if (!p->pid)
		return 0;
	for (;;) {
		pid_t r = waitpid(p->pid, &p->status, WNOHANG);

		if (r == p->pid) {
			p->pid = 0;
			return 0;
		}
		if (r < 0)
			return -errno;
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(5);
	}
}

void bst_proc_kill(struct bst_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		kill(p->pid, SIGCONT);
		waitpid(p->pid, &p->status, 0);
		p->pid = 0;
	}
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->in_fd = p->out_fd = -1;
	if (p->shm)
		munmap(p->shm, sizeof(struct spin_shm));
	p->shm = NULL;
}

static int proc_state(const char *stat_path, char *state)
{
	char buf[1024], *rp;
	ssize_t n;
	int fd = open(stat_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip to the last ')'. */
	rp = strrchr(buf, ')');
	if (!rp || rp[1] != ' ' || !rp[2])
		return -EIO;
	*state = rp[2];
	return 0;
}

bool bst_proc_alive(const struct bst_proc *p)
{
	char path[64], st;

	if (p->pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", p->pid);
	if (proc_state(path, &st))
		return false;
	return st != 'Z' && st != 'X';
}

uint64_t bst_spin_calls(const struct bst_proc *p)
{
	uint64_t sum = 0;

	if (!p->shm)
		return 0;
	for (unsigned int i = 0; i < SPIN_MAX_THREADS; i++)
		sum += __atomic_load_n(&p->shm->calls[i], __ATOMIC_ACQUIRE);
	return sum;
}

int bst_spin_wait_calls(const struct bst_proc *p, uint64_t more,
			int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint64_t goal = bst_spin_calls(p) + more;

	while (bst_spin_calls(p) < goal) {
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(2);
	}
	return 0;
}

int bst_thread_states(pid_t pid, char *states, size_t cap, size_t *n)
{
	char path[320];
	struct dirent *de;
	DIR *d;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid,
			 de->d_name);
		if (proc_state(path, &st))
			continue;	/* the thread just exited */
		if (*n < cap)
			states[*n] = st;
		(*n)++;
	}
	closedir(d);
	return 0;
}

int bst_wait_all_threads(pid_t pid, char want, int timeout_ms)
{
	uint64_t deadline = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	char st[64];
	size_t n;

	for (;;) {
		bool all = true;
		int err = bst_thread_states(pid, st, sizeof(st), &n);

		if (err)
			return err;
		/* a stop under a tracer's PTRACE_LISTEN (bfctl run) is 't' */
		for (size_t i = 0; i < n && i < sizeof(st); i++)
			all &= st[i] == want || (want == 'T' && st[i] == 't');
		if (all && n)
			return 0;
		if (bst_now_ns() >= deadline)
			return -ETIMEDOUT;
		bst_sleep_ms(5);
	}
}

/* ---- the module ------------------------------------------------------- */

const char *bst_ko_path(void)
{
	const char *ko = getenv("BFT_KO");

	return ko && *ko ? ko : NULL;
}

bool bst_module_loaded(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/modules", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "bftrace ", 8);
	fclose(f);
	return found;
}

static int family_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct { const char *name; bool *listed; } *q = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_NAME &&
		    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING) &&
		    !strcmp(mnl_attr_get_str(a), q->name))
			*q->listed = true;
	}
	return MNL_CB_OK;
}

int bst_family_listed(const char *name, bool *listed)
{
	char buf[32768];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	struct { const char *name; bool *listed; } q = { name, listed };
	unsigned int seq = (unsigned int)time(NULL), portid;
	ssize_t n;
	int ret = 0;

	*listed = false;
	nl = mnl_socket_open(NETLINK_GENERIC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, family_dump_cb, &q);

		if (r == MNL_CB_STOP)
			break;
		if (r < 0) {
			ret = -errno;
			break;
		}
	}
	if (n < 0)
		ret = -errno;
out:
	mnl_socket_close(nl);
	return ret;
}

int bst_insmod(const char *ko)
{
	int fd, err = 0;

	if (!ko)
		return -EINVAL;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		LOG("open %s: %s\n", ko, strerror(errno));
		return err;
	}
	if (syscall(SYS_finit_module, fd, "", 0)) {
		err = -errno;
		LOG("finit_module %s: %s\n", ko, strerror(errno));
	}
	close(fd);
	return err;
}

int bst_rmmod(void)
{
	if (syscall(SYS_delete_module, "bftrace", O_NONBLOCK)) {
		int err = -errno;

		LOG("delete_module bftrace: %s\n", strerror(errno));
		return err;
	}
	return 0;
}

int bst_ensure_loaded(void)
{
	if (bst_module_loaded())
		return 0;
	if (!bst_ko_path()) {
		LOG("bftrace is not loaded and BFT_KO is not set\n");
		return -ENOENT;
	}
	return bst_insmod(bst_ko_path());
}

/* ---- a control session ------------------------------------------------ */

/*
 * The options as this test program found them, read in the parent before
 * the harness forks any test, so a test that changed one and died before
 * its teardown does not make the next test restore the wrong value.
 */
static struct bft_nl_opt initial_opts[BFT_OPT_MAX + 1];
static bool have_initial[BFT_OPT_MAX + 1];

static void read_opts(struct bft_nl *nl, struct bft_nl_opt *opts, bool *have)
{
	struct bft_nl_opt all[BFT_OPT_MAX + 8];
	size_t n = 0;

	if (bft_nl_get_opts(nl, all, ARRAY_SIZE(all), &n))
		return;
	for (size_t i = 0; i < n && i < ARRAY_SIZE(all); i++) {
		if (all[i].id >= 1 && all[i].id <= BFT_OPT_MAX) {
			opts[all[i].id] = all[i];
			have[all[i].id] = true;
		}
	}
}

__attribute__((constructor)) static void capture_initial_opts(void)
{
	struct bft_nl *nl;

	if (!bst_module_loaded() || bft_nl_open(&nl, NULL, 0))
		return;
	read_opts(nl, initial_opts, have_initial);
	bft_nl_close(nl);
}

int bst_mode(struct bst_session *s, int cmd)
{
	int err = bft_nl_mode_cmd(s->nl, cmd, NULL);

	if (err)
		LOG("%s: %s (%s)\n", bft_cmd_name((unsigned int)cmd),
		    strerror(-err), bft_nl_errmsg(s->nl));
	return err;
}

int bst_start(struct bst_session *s, bool persist)
{
	int err = bft_nl_start(s->nl, persist, NULL);

	if (err)
		LOG("start%s: %s (%s)\n", persist ? " (persist)" : "",
		    strerror(-err), bft_nl_errmsg(s->nl));
	return err;
}

int bst_set_opt(struct bst_session *s, uint32_t id, uint64_t value)
{
	int err = bft_nl_set_opt(s->nl, id, value, NULL);

	if (err)
		LOG("set %s=%llu: %s (%s)\n", bft_opt_name(id),
		    (unsigned long long)value, strerror(-err),
		    bft_nl_errmsg(s->nl));
	return err;
}

static int drain_rings(struct bst_session *s)
{
	struct bft_rings *r;
	char err[256] = "";
	uint32_t flush = s->have_opt[BFT_OPT_FLUSH_MS] ?
			 (uint32_t)s->opts[BFT_OPT_FLUSH_MS].value : 100;
	ssize_t n;
	int ret;

	ret = bft_rings_open(&r, NULL, s->caps.nr_cpus, err, sizeof(err));
	if (ret) {
		LOG("opening the rings: %s\n", err);
		return ret;
	}
	n = bft_rings_drain(r, (int)flush * 2 + 20, 5000, NULL, NULL);
	bft_rings_close(r);
	if (n < 0) {
		LOG("draining the rings: %s\n", strerror((int)-n));
		return (int)n;
	}
	return 0;
}

int bst_reset(struct bst_session *s)
{
	struct bft_nl_status st;
	int err, ret = 0;

	err = bft_nl_get_status(s->nl, &st);
	if (err) {
		LOG("get_status: %s (%s)\n", strerror(-err), bft_nl_errmsg(s->nl));
		return err;
	}
	if (st.mode == BFT_MODE_TRACING || st.mode == BFT_MODE_PAUSED ||
	    st.mode == BFT_MODE_SUSPENDED)
		ret = bst_mode(s, BFT_CMD_STOP);
	bft_nl_status_free(&st);

	err = bft_nl_detach(s->nl, 0);
	if (err && err != -ENOENT) {
		LOG("detach all: %s (%s)\n", strerror(-err), bft_nl_errmsg(s->nl));
		ret = ret ?: err;
	}

	/* a ring that holds records cannot be resized */
	err = drain_rings(s);
	ret = ret ?: err;
	for (uint32_t id = 1; id <= BFT_OPT_MAX; id++) {
		const struct bft_nl_opt *want = have_initial[id] ?
			&initial_opts[id] : &s->opts[id];
		struct bft_nl_opt now;

		if (!have_initial[id] && !s->have_opt[id])
			continue;
		if (bft_nl_get_opt(s->nl, id, &now) || now.value == want->value)
			continue;
		err = bst_set_opt(s, id, want->value);
		ret = ret ?: err;
	}
	err = drain_rings(s);
	return ret ?: err;
}

int bst_session_open(struct bst_session *s)
{
	char msg[256] = "";
	int err;

	memset(s, 0, sizeof(*s));
	err = bst_ensure_loaded();
	if (err)
		return err;
	err = bft_nl_open(&s->nl, msg, sizeof(msg));
	if (err) {
		LOG("netlink: %s\n", msg);
		return err;
	}
	err = bft_nl_get_caps(s->nl, &s->caps);
	if (err) {
		LOG("get_caps: %s (%s)\n", strerror(-err), bft_nl_errmsg(s->nl));
		return err;
	}
	read_opts(s->nl, s->opts, s->have_opt);
	return bst_reset(s);
}

void bst_session_close(struct bst_session *s)
{
	if (!s->nl)
		return;
	bst_reset(s);
	bft_nl_close(s->nl);
	s->nl = NULL;
}

void bst_session_close_loaded(struct bst_session *s)
{
	if (!bst_module_loaded() && bst_ko_path())
		bst_insmod(bst_ko_path());
	if (!s->nl && bst_module_loaded())
		bst_session_open(s);
	bst_session_close(s);
}

int bst_run_port(int salt)
{
	return 20000 + (getpid() * salt + (int)(bst_now_ns() % 997)) % 20000;
}

/* ---- probes ------------------------------------------------------------ */

int bst_resolve(const struct bst_fn *fns, size_t n, struct bft_nl_probe *probes)
{
	for (size_t i = 0; i < n; i++) {
		struct bft_elf *e;
		struct bft_elf_func f;
		char msg[256] = "";
		int err = bft_elf_open(fns[i].file, &e, msg, sizeof(msg));

		if (err) {
			LOG("%s: %s\n", fns[i].file, msg);
			return err;
		}
		err = bft_elf_find_func(e, fns[i].func, &f);
		if (err) {
			LOG("%s: %s: %s\n", fns[i].file, fns[i].func,
			    bft_elf_errmsg(e));
			bft_elf_close(e);
			return err;
		}
		probes[i] = (struct bft_nl_probe){
			.path = fns[i].file,
			.offset = f.probe_offset,
			.method_id = fns[i].method_id,
			.flags = BFT_PF_ALL,
			.name = fns[i].func,
		};
		bft_elf_close(e);
	}
	return 0;
}

int bst_bpf_attach_self(struct bft_bpf *b, const char *func,
			uint32_t method_id)
{
	static char exe[4096];
	struct bst_fn fn = { .file = exe, .func = func, .method_id = method_id };
	struct bft_nl_probe probe;
	cpu_set_t one;
	ssize_t n;
	int err, res;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return n ? -errno : -ENOENT;
	exe[n] = '\0';
	err = bst_resolve(&fn, 1, &probe);
	if (!err)
		err = bft_bpf_attach(b, (uint32_t)getpid(), &probe, 1, &res);
	if (err)
		LOG("attaching %s: %s\n", func, bft_bpf_errmsg(b));
	return err;
}

int bst_attach_fns(struct bst_session *s, pid_t tgid,
		   const struct bst_fn *fns, size_t n)
{
	struct bft_nl_probe *probes = calloc(n, sizeof(*probes));
	int *results = calloc(n, sizeof(*results));
	int err = -ENOMEM;

	if (!probes || !results)
		goto out;
	err = bst_resolve(fns, n, probes);
	if (err)
		goto out;
	err = bft_nl_attach(s->nl, (uint32_t)tgid, probes, n, results);
	if (err) {
		LOG("attach to %d: %s (%s)\n", tgid, strerror(-err),
		    bft_nl_errmsg(s->nl));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (results[i]) {
			LOG("attach %s:%s: %s\n", fns[i].file, fns[i].func,
			    strerror(-results[i]));
			err = results[i];
		}
	}
out:
	free(probes);
	free(results);
	return err;
}

int bst_nonexec_offset(const char *path, uint64_t *offset)
{
	int fd, ret = -ENOENT;
	Elf *elf;
	size_t nph;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph)) {
		ret = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < nph && ret; i++) {
		GElf_Phdr ph, x;
		uint64_t cand;
		bool in_exec = false;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & PF_X) || ph.p_filesz < 2)
			continue;
		cand = ph.p_offset + ph.p_filesz / 2;
		for (size_t j = 0; j < nph; j++) {
			if (gelf_getphdr(elf, (int)j, &x) && x.p_type == PT_LOAD &&
			    (x.p_flags & PF_X) && cand >= x.p_offset &&
			    cand < x.p_offset + x.p_filesz)
				in_exec = true;
		}
		if (!in_exec) {
			*offset = cand;
			ret = 0;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

/* ---- traces ------------------------------------------------------------ */

struct collect_ctx {
	struct bst_trace *t;
	struct bft_calltree ct;
	int err;
};

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static struct bst_thread *thread_get(struct bst_trace *t, uint32_t tgid,
				     uint32_t tid)
{
	struct bst_thread *th;

	for (size_t i = t->nth; i-- > 0;) {
		if (t->th[i].tid == tid && t->th[i].tgid == tgid)
			return &t->th[i];
	}
	th = realloc(t->th, (t->nth + 1) * sizeof(*th));
	if (!th)
		return NULL;
	t->th = th;
	th = &t->th[t->nth++];
	memset(th, 0, sizeof(*th));
	th->tgid = tgid;
	th->tid = tid;
	return th;
}

static int push_ev(struct bst_thread *th, uint8_t kind, uint32_t id,
		   const struct bft_record *r)
{
	if (grow((void **)&th->ev, &th->cap, th->n + 1, sizeof(*th->ev)))
		return -ENOMEM;
	th->ev[th->n++] = (struct bst_ev){
		.kind = kind, .id = id, .cpu = r->cpu, .time_ns = r->time_ns,
	};
	return 0;
}

static int on_call(void *arg, const struct bft_call_event *ev)
{
	struct collect_ctx *c = arg;
	struct bst_thread *th = thread_get(c->t, ev->tgid, ev->tid);

	if (!th || grow((void **)&th->calls, &th->calls_cap, th->ncalls + 1,
			sizeof(*th->calls)))
		return -ENOMEM;
	th->calls[th->ncalls++] = (struct bst_call){
		.kind = (uint8_t)ev->kind, .noret = ev->noret, .id = ev->id,
		.depth = ev->depth, .time_ns = ev->time_ns,
		.unwound = ev->unwound, .how = ev->how, .exc = ev->exc,
	};
	return 0;
}

static int on_record(void *arg, const struct bft_record *r)
{
	struct collect_ctx *c = arg;
	struct bst_trace *t = c->t;
	struct bst_thread *th;
	int err = 0;

	if (r->cpu >= t->nr_cpus)
		return -EINVAL;
	if (r->kind == BFT_REC_LOST)
		t->cpu[r->cpu].lost_records++;
	else if (r->kind == BFT_REC_SYNC &&
		 t->cpu[r->cpu].last_kind == BFT_REC_LOST)
		t->cpu[r->cpu].lost_synced++;
	t->cpu[r->cpu].last_kind = r->kind;
	switch (r->kind) {
	case BFT_REC_SYNC:
		if (!t->cpu[r->cpu].syncs++)
			t->cpu[r->cpu].first_time_ns = r->time_ns;
		break;
	case BFT_REC_ENTER:
	case BFT_REC_ENTER_NORET:
	case BFT_REC_EXIT:
		th = thread_get(t, r->tgid, r->tid);
		if (!th)
			return -ENOMEM;
		if (r->kind == BFT_REC_ENTER)
			err = push_ev(th, BST_ENTER, (uint32_t)r->value, r);
		else if (r->kind == BFT_REC_ENTER_NORET)
			err = push_ev(th, BST_NORET, (uint32_t)r->value, r);
		else
			for (uint64_t i = 0; i < r->value && !err; i++)
				err = push_ev(th, BST_EXIT, 0, r);
		break;
	case BFT_REC_BREAK:
	case BFT_REC_LOST:
	case BFT_REC_GAP:
		if (grow((void **)&t->marks, &t->marks_cap, t->nmarks + 1,
			 sizeof(*t->marks)))
			return -ENOMEM;
		t->marks[t->nmarks++] = (struct bst_mark){
			.kind = r->kind, .cpu = r->cpu, .value = r->value,
			.time_ns = r->time_ns,
		};
		break;
	default:
		break;
	}
	if (err)
		return err;
	return bft_calltree_feed(&c->ct, r);
}

int bst_collect(struct bst_session *s, int quiet_ms, int max_ms,
		struct bst_trace *t)
{
	const uint8_t **data;
	size_t *lens;
	struct bft_rings *r = NULL;
	char msg[256] = "";
	uint32_t nr_cpus = s->caps.nr_cpus;
	ssize_t got;
	int err;

	memset(t, 0, sizeof(*t));
	err = bft_rings_open(&r, NULL, nr_cpus, msg, sizeof(msg));
	if (err) {
		snprintf(t->err, sizeof(t->err), "opening the rings: %s", msg);
		return err;
	}
	got = bft_rings_drain(r, quiet_ms, max_ms, NULL, NULL);
	if (got < 0) {
		snprintf(t->err, sizeof(t->err), "draining the rings: %s",
			 bft_rings_errmsg(r));
		bft_rings_close(r);
		return (int)got;
	}
	data = calloc(nr_cpus ? nr_cpus : 1, sizeof(*data));
	lens = calloc(nr_cpus ? nr_cpus : 1, sizeof(*lens));
	if (!data || !lens) {
		free(data);
		free(lens);
		bft_rings_close(r);
		return -ENOMEM;
	}
	for (uint32_t cpu = 0; cpu < nr_cpus; cpu++)
		if (bft_rings_bound(r, cpu))
			data[cpu] = bft_rings_data(r, cpu, &lens[cpu]);
	err = bst_decode(t, nr_cpus, data, lens);
	free(data);
	free(lens);
	bft_rings_close(r);
	return err;
}

int bst_decode(struct bst_trace *t, uint32_t nr_cpus,
	       const uint8_t *const *data, const size_t *lens)
{
	struct bft_calltree_opts cto = { .on_call = on_call };
	struct collect_ctx c = { .t = t };
	struct bft_merge_opts mo = { .on_record = on_record, .ctx = &c,
				     .policy = BFT_STREAM_STOP };
	struct bft_merge m;
	int err;

	memset(t, 0, sizeof(*t));
	t->nr_cpus = nr_cpus;
	t->cpu = calloc(t->nr_cpus ? t->nr_cpus : 1, sizeof(*t->cpu));
	if (!t->cpu)
		return -ENOMEM;
	cto.ctx = &c;
	mo.ncpus = t->nr_cpus;
	err = bft_calltree_init(&c.ct, &cto);
	if (err)
		return err;
	err = bft_merge_init(&m, &mo);
	if (err) {
		bft_calltree_free(&c.ct);
		return err;
	}
	for (uint32_t cpu = 0; cpu < t->nr_cpus && !err; cpu++) {
		size_t len = data[cpu] ? lens[cpu] : 0;

		t->cpu[cpu].bytes = len;
		if (len)
			err = bft_merge_feed(&m, cpu, data[cpu], len);
	}
	if (!err)
		err = bft_merge_drain(&m);
	for (uint32_t cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct bft_stream *st = bft_merge_stream(&m, cpu);
		const struct bft_stream_stats *ss;
		const struct bft_stream_error *se;

		if (!st)
			continue;
		ss = bft_stream_stats(st);
		se = bft_stream_last_error(st);
		t->cpu[cpu].events = ss->events;
		t->cpu[cpu].lost = ss->lost;
		t->cpu[cpu].breaks = ss->breaks;
		if (se->code != BFT_SERR_NONE && !t->err[0])
			snprintf(t->err, sizeof(t->err), "%s", se->msg);
	}
	if (err && !t->err[0])
		snprintf(t->err, sizeof(t->err), "merging the streams: %s",
			 strerror(-err));
	t->orphans = bft_calltree_stats(&c.ct)->orphans;
	t->unbalanced = bft_calltree_stats(&c.ct)->unbalanced;
	bft_merge_free(&m);
	bft_calltree_free(&c.ct);
	if (!err && t->err[0])
		err = -EPROTO;
	return err;
}

size_t bst_marks_besides_losses(const struct bst_trace *t,
				const struct bst_mark **first)
{
	size_t n = 0;

	*first = NULL;
	for (size_t i = 0; i < t->nmarks; i++) {
		const struct bst_mark *mk = &t->marks[i];

		if (mk->kind == BFT_REC_LOST ||
		    (mk->kind == BFT_REC_BREAK && mk->value == BFT_BREAK_STOP))
			continue;
		if (!n++)
			*first = mk;
	}
	return n;
}

void bst_trace_free(struct bst_trace *t)
{
	for (size_t i = 0; i < t->nth; i++) {
		free(t->th[i].ev);
		free(t->th[i].calls);
	}
	free(t->th);
	free(t->marks);
	free(t->cpu);
	memset(t, 0, sizeof(*t));
}

const struct bst_thread *bst_trace_thread(const struct bst_trace *t,
					  uint32_t tgid, uint32_t tid)
{
	for (size_t i = 0; i < t->nth; i++) {
		if (t->th[i].tid == tid && t->th[i].tgid == tgid)
			return &t->th[i];
	}
	return NULL;
}

size_t bst_trace_threads_of(const struct bst_trace *t, uint32_t tgid,
			    const struct bst_thread **out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nth; i++) {
		if (t->th[i].tgid != tgid)
			continue;
		if (n < cap)
			out[n] = &t->th[i];
		n++;
	}
	return n;
}

/* Appends to a malloc'ed string; on ENOMEM the text is just cut short. */
static void text_add(char **buf, size_t *len, size_t *cap, const char *word)
{
	size_t w = strlen(word);

	if (grow((void **)buf, cap, *len + w + 2, 1))
		return;
	if (*len)
		(*buf)[(*len)++] = ' ';
	memcpy(*buf + *len, word, w + 1);
	*len += w;
}

char *bst_ev_text(const struct bst_ev *ev, size_t n)
{
	char *buf = NULL, word[24];
	size_t len = 0, cap = 0;

	text_add(&buf, &len, &cap, "");
	len = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == BST_EXIT)
			snprintf(word, sizeof(word), "x");
		else
			snprintf(word, sizeof(word), "%c%u",
				 ev[i].kind == BST_NORET ? 'n' : 'e', ev[i].id);
		text_add(&buf, &len, &cap, word);
	}
	return buf;
}

char *bst_call_text(const struct bst_call *c, size_t n)
{
	char *buf = NULL, word[24];
	size_t len = 0, cap = 0;

	text_add(&buf, &len, &cap, "");
	len = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i].kind == BFT_CALL_VOID)
			snprintf(word, sizeof(word), "|");
		else
			snprintf(word, sizeof(word), "%c%u",
				 c[i].kind == BFT_CALL_THROW ? 't' :
				 c[i].kind == BFT_CALL_EXIT ?
				 (c[i].unwound ? 'u' : 'x') :
				 c[i].noret ? 'n' : 'e', c[i].id);
		text_add(&buf, &len, &cap, word);
	}
	return buf;
}

bool bst_text_mentions(const char *text, const char *const *words)
{
	LOG("message: \"%s\"\n", text ? text : "(null)");
	if (!text)
		return false;
	for (; *words; words++) {
		if (strcasestr(text, *words))
			return true;
	}
	return false;
}

unsigned int bst_possible_cpus(void)
{
	char buf[256];
	unsigned int n = 0;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		/* "0-3,5,7-8" */
		for (char *tok = strtok(buf, ",\n"); tok; tok = strtok(NULL, ",\n")) {
			unsigned int a, b;

			if (sscanf(tok, "%u-%u", &a, &b) == 2 && b >= a)
				n += b - a + 1;
			else if (sscanf(tok, "%u", &a) == 1)
				n++;
		}
	}
	fclose(f);
	return n;
}

int bst_spinner_traced(struct bst_session *s, struct bst_proc *p,
		       const char *const *argv, uint32_t method_id, bool start)
{
	char *path = bst_target_path("spinner");
	struct bst_fn fn = { path, SPIN_FN, method_id };
	int err;

	if (!path)
		return -ENOMEM;
	err = bst_proc_start(p, "spinner", argv, true, 10000);
	if (!err)
		err = bst_attach_fns(s, p->pid, &fn, 1);
	if (!err && start)
		err = bst_mode(s, BFT_CMD_START);
	free(path);
	return err;
}

struct bst_method_count {
	uint32_t tgid;
	size_t live, gone;
};

static int bst_count_method(const struct bft_nl_method *m, void *arg)
{
	struct bst_method_count *c = arg;

	if (c->tgid && m->tgid != c->tgid)
		return 0;
	if (m->flags & BFT_PF_GONE)
		c->gone++;
	else
		c->live++;
	return 0;
}

int bst_count_methods(struct bst_session *s, uint32_t tgid, size_t *live,
		      size_t *gone)
{
	struct bst_method_count c = { .tgid = tgid };
	int err = bft_nl_get_methods(s->nl, bst_count_method, &c);

	*live = c.live;
	*gone = c.gone;
	return err;
}

/* ---- the BPF backend ---------------------------------------------------- */

void bst_bpf_mount(void)
{
	struct statfs sfs;

	/* a guest's init may not mount bpffs */
	if (!statfs("/sys/fs/bpf", &sfs) && sfs.f_type != 0xcafe4a11)
		mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL);
}

int bst_bpf_open(struct bft_bpf **bp, char *why, size_t len)
{
	char err[512];
	int ret;

	*bp = NULL;
	/* a session of the tests' own, beside any real one */
	setenv("BFT_BPF_PIN_DIR", "/sys/fs/bpf/bftrace-selftest", 0);
	bst_bpf_mount();
	if (bft_bpf_probe(why, len))
		return 1;
	if (bft_bpf_loaded())
		bft_bpf_unload(err, sizeof(err));	/* a failed test's */
	ret = bft_bpf_open(bp, true, why, len);
	return ret;
}

int bst_backend_open(bool bpf, struct bst_session *s, struct bft_bpf **bp,
		     unsigned int depth, char *why, size_t len)
{
	const char *only = getenv("BFT_BACKEND");
	struct bft_nl_opt d;
	int ret;

	why[0] = '\0';
	if (bpf) {
		char what[512];

		ret = bst_bpf_open(bp, what, sizeof(what));
		if (ret)
			snprintf(why, len, "BPF backend: %s", what);
		else	/* the tools the test spawns take it from here */
			setenv("BFT_BACKEND", "bpf", 1);
		return ret;
	}
	if (only && !strcmp(only, "bpf")) {
		snprintf(why, len, "BFT_BACKEND=bpf: the module's variants do "
			 "not run");
		return 1;
	}
	ret = bst_session_open(s);
	if (ret)
		return ret;
	/* BFT_OPT_MAX_DEPTH must not cut the target's deepest recursion */
	ret = bft_nl_get_opt(s->nl, BFT_OPT_MAX_DEPTH, &d);
	if (!ret && d.value && d.value <= depth)
		ret = bst_set_opt(s, BFT_OPT_MAX_DEPTH, d.min == 0 ? 0 : d.max);
	return ret;
}

void bst_bpf_close(struct bft_bpf *b)
{
	char err[512];

	if (!b)
		return;
	bft_bpf_close(b);
	bft_bpf_unload(err, sizeof(err));
}

struct bpf_bufs {
	uint8_t **data;
	size_t *len, *cap;
};

static int bpf_append(unsigned int cpu, const void *data, size_t len,
		      void *arg)
{
	struct bpf_bufs *bb = arg;

	if (grow((void **)&bb->data[cpu], &bb->cap[cpu], bb->len[cpu] + len, 1))
		return -ENOMEM;
	memcpy(bb->data[cpu] + bb->len[cpu], data, len);
	bb->len[cpu] += len;
	return 0;
}

int bst_bpf_collect(struct bft_bpf *b, int quiet_ms, int max_ms,
		    struct bst_trace *t)
{
	struct bft_nl_caps caps;
	struct bft_bpf_rings *r;
	struct bpf_bufs bb;
	ssize_t got;
	int err;

	memset(t, 0, sizeof(*t));
	bft_bpf_get_caps(b, &caps);
	bb.data = calloc(caps.nr_cpus, sizeof(*bb.data));
	bb.len = calloc(caps.nr_cpus, sizeof(*bb.len));
	bb.cap = calloc(caps.nr_cpus, sizeof(*bb.cap));
	err = bb.data && bb.len && bb.cap ? 0 : -ENOMEM;
	if (!err)
		err = bft_bpf_rings_open(b, &r, bpf_append, &bb);
	if (!err) {
		got = bft_bpf_rings_drain(r, quiet_ms, max_ms);
		bft_bpf_rings_close(r);
		if (got < 0) {
			err = (int)got;
			snprintf(t->err, sizeof(t->err), "draining the rings: %s",
				 bft_bpf_errmsg(b));
		}
	}
	if (!err)
		err = bst_decode(t, caps.nr_cpus,
				 (const uint8_t *const *)bb.data, bb.len);
	for (uint32_t i = 0; bb.data && i < caps.nr_cpus; i++)
		free(bb.data[i]);
	free(bb.data);
	free(bb.len);
	free(bb.cap);
	return err;
}

/* ---- the tools of build/user ---------------------------------------- */

char *bst_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			char *b = realloc(buf, cap = 2 * cap + 8192);

			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

char *bst_tool_path(const char *name)
{
	char rel[64];

	/* build/selftests/targets/../../user/<name> = build/user/<name> */
	snprintf(rel, sizeof(rel), "../../user/%s", name);
	return bst_target_path(rel);
}

pid_t bst_child_starter(int (*start)(void *arg), void *arg)
{
	int fds[2];
	char ok = 0;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		if (start(arg))
			_exit(1);
		if (write(fds[1], "y", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &ok, 1) != 1 || ok != 'y') {
		close(fds[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(fds[0]);
	return pid;
}

int bst_kill_and_reap(pid_t *pid)
{
	int st;

	if (kill(*pid, SIGKILL) || waitpid(*pid, &st, 0) != *pid)
		return -errno;
	*pid = 0;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -ECHILD;
}

/* 1 if a thread of pid is stopped, 0 if none, -ESRCH if pid is gone. */
static int stopped(pid_t pid)
{
	char st[64];
	size_t n;

	if (bst_thread_states(pid, st, sizeof(st), &n))
		return -ESRCH;
	for (size_t i = 0; i < n && i < sizeof(st); i++)
		if (st[i] == 'T' || st[i] == 't')
			return 1;
	return 0;
}

bool bst_any_stopped(pid_t pid)
{
	return stopped(pid) == 1;
}

int bst_wait_none_stopped(pid_t pid, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r;

	while ((r = stopped(pid)) == 1) {
		if (bst_now_ns() >= end)
			return -ETIMEDOUT;
		bst_sleep_ms(20);
	}
	return r;	/* 0, or -ESRCH: a target that died is no success */
}

pid_t bst_spawn(const char *const *argv, const char *log)
{
	char *path = bst_tool_path(argv[0]);
	pid_t pid;

	if (!path)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	free(path);
	return pid;
}

int bst_wait_exit(pid_t pid, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) :
			       128 + WTERMSIG(st);
		if (r < 0)
			return -errno;
		if (bst_now_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		bst_sleep_ms(20);
	}
}

bool bst_port_listening(int port, int timeout_ms)
{
	uint64_t end = bst_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	do {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		bool ok = fd >= 0 &&
			  !connect(fd, (struct sockaddr *)&a, sizeof(a));

		if (fd >= 0)
			close(fd);
		if (ok)
			return true;
		bst_sleep_ms(50);
	} while (bst_now_ns() < end);
	return false;
}

void bst_show_log(const char *path)
{
	char *text = bst_slurp(path);
	char *line, *save = NULL;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "#   | %s\n", line);
	free(text);
}
