// SPDX-License-Identifier: GPL-2.0
/*
 * Ring memory and the memory cgroup (docs/kernel-module.md, "Security
 * model"):
 *   - the rings are charged to the memory cgroup of the process whose
 *     command allocated them: that cgroup's memory.current grows by about
 *     their size;
 *   - a cgroup whose memory.max cannot hold them gets -ENOMEM with text,
 *     its OOM killer kills nobody, and the rings that did fit are given
 *     back;
 *   - max_ring_mem refuses before anything is charged.
 * Each test starts from a freshly loaded module, which has no rings yet
 * (lazy_test), so the process under test is the one that allocates them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define RING_SIZE	(4u << 20)
#define MIB		(1ull << 20)

FIXTURE(memcg) {
	char cg[128];
	unsigned int cpus;
	uint64_t rings;		/* bytes of all rings together */
};

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return 0;
}

static int cg_write(const char *cg, const char *file, const char *s)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return write_str(path, s);
}

/* A small file whole, NUL-terminated: its length, or -errno. */
static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return n;
}

/* A key of a flat-keyed file (memory.events), or a one-number file. */
static int64_t cg_read(const char *cg, const char *file, const char *key)
{
	char path[256], text[4096], *p;
	int64_t v = -1;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	if (read_text(path, text, sizeof(text)) < 0)
		return -1;
	p = text;
	if (key) {
		size_t kl = strlen(key);

		for (p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, key, kl) && p[kl] == ' ')
				break;
		p = p ? p + kl + 1 : NULL;
	}
	if (p)
		v = strtoll(p, NULL, 10);
	return v;
}

/* cgroup v2 with the memory controller for children of the root. */
static int cg_ready(void)
{
	char ctl[256];

	if (read_text(CG_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) < 0 &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return -errno;
	if (read_text(CG_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) < 0 ||
	    !strstr(ctl, "memory"))
		return -EOPNOTSUPP;
	return cg_write(CG_ROOT, "cgroup.subtree_control", "+memory");
}

/* rmmod and insmod: the options at their defaults, no rings. */
static int fresh_module(void)
{
	int err = bst_module_loaded() ? bst_rmmod() : 0;

	return err ?: bst_insmod(bst_ko_path());
}

FIXTURE_SETUP(memcg)
{
	int err;

	if (!bst_ko_path())
		SKIP(return, "BFT_KO is not set: cannot load the module afresh");
	err = cg_ready();
	if (err == -EOPNOTSUPP || err == -ENOENT)
		SKIP(return, "no cgroup v2 memory controller");
	ASSERT_EQ(0, err) TH_LOG("cgroup v2: %s", strerror(-err));
	ASSERT_EQ(0, fresh_module());
	snprintf(self->cg, sizeof(self->cg), CG_ROOT "/bft-memcg-%d",
		 (int)getpid());
	ASSERT_EQ(0, mkdir(self->cg, 0755)) TH_LOG("%s", strerror(errno));
	self->cpus = bst_possible_cpus();
	ASSERT_LT(0, self->cpus);
	self->rings = (uint64_t)self->cpus * RING_SIZE;
}

FIXTURE_TEARDOWN(memcg)
{
	/* frees the rings, which uncharges the cgroup before it goes */
	if (bst_ko_path())
		fresh_module();
	if (self->cg[0])
		rmdir(self->cg);
}

/* Nothing else allocates before the child: no session, no reader. */
static int set_opt(uint32_t id, uint64_t value)
{
	struct bft_nl *nl;
	int err = bft_nl_open(&nl, NULL, 0);

	if (err)
		return err;
	err = bft_nl_set_opt(nl, id, value, NULL);
	bft_nl_close(nl);
	return err;
}

/* The rings' size as GET_STATUS reports it. */
static int64_t ring_size(void)
{
	struct bft_nl_status st;
	struct bft_nl *nl;
	int64_t size = -1;

	if (bft_nl_open(&nl, NULL, 0))
		return -1;
	if (!bft_nl_get_status(nl, &st)) {
		if (st.nr_cpus)
			size = st.cpus[0].size;
		bft_nl_status_free(&st);
	}
	bft_nl_close(nl);
	return size;
}

struct outcome {
	int err;		/* the command's */
	char msg[200];
	int status;		/* the child's wait status */
};

enum act { START, SET_BUF };

/* In a child moved into @cg: a persistent start, or buf_size RING_SIZE. */
static struct outcome *run_in(const char *cg, enum act act)
{
	struct outcome *o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char pid[16];
	pid_t child;

	if (o == MAP_FAILED)
		return NULL;
	o->err = -EINPROGRESS;
	child = fork();
	if (child == 0) {
		struct bft_nl *nl;

		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		o->err = cg_write(cg, "cgroup.procs", pid);
		if (o->err) {
			snprintf(o->msg, sizeof(o->msg), "joining %s", cg);
			_exit(1);
		}
		o->err = bft_nl_open(&nl, o->msg, sizeof(o->msg));
		if (o->err)
			_exit(1);
		if (act == START)
			o->err = bft_nl_start(nl, true, NULL);
		else
			o->err = bft_nl_set_opt(nl, BFT_OPT_BUF_SIZE, RING_SIZE,
						NULL);
		if (o->err)
			snprintf(o->msg, sizeof(o->msg), "%s", bft_nl_errmsg(nl));
		bft_nl_close(nl);
		_exit(0);
	}
	if (child < 0 || waitpid(child, &o->status, 0) != child) {
		munmap(o, sizeof(*o));
		return NULL;
	}
	return o;
}

static bool lived(const struct outcome *o)
{
	return WIFEXITED(o->status) && !WEXITSTATUS(o->status);
}

/* @act in @cg is refused with @err and text naming @word; nobody killed. */
static void refused_in(struct __test_metadata *_metadata, const char *cg,
		       enum act act, int err, const char *word)
{
	struct outcome *o = run_in(cg, act);

	ASSERT_NE(NULL, o);
	EXPECT_TRUE(lived(o))
		TH_LOG("the child did not live to hear the answer: status %#x%s",
		       o->status, WIFSIGNALED(o->status) &&
		       WTERMSIG(o->status) == SIGKILL ? " (SIGKILL)" : "");
	EXPECT_EQ(err, o->err)
		TH_LOG("%s: %s (%s)", act == START ? "start" : "buf_size",
		       strerror(-o->err), o->msg);
	EXPECT_TRUE(BST_MENTIONS(o->msg, word))
		TH_LOG("extack text '%s'", o->msg);
	EXPECT_EQ(0, cg_read(cg, "memory.events", "oom_kill"));
	munmap(o, sizeof(*o));
}

static void stop_session(void)
{
	struct bft_nl *nl;

	if (bft_nl_open(&nl, NULL, 0))
		return;
	bft_nl_mode_cmd(nl, BFT_CMD_STOP, NULL);
	bft_nl_close(nl);
}

TEST_F_TIMEOUT(memcg, rings_are_charged_to_the_callers_cgroup, 120)
{
	struct outcome *o;
	int64_t before, after;

	ASSERT_EQ(0, set_opt(BFT_OPT_BUF_SIZE, RING_SIZE));
	before = cg_read(self->cg, "memory.current", NULL);
	ASSERT_LE(0, before);
	o = run_in(self->cg, START);
	ASSERT_NE(NULL, o);
	ASSERT_TRUE(lived(o))
		TH_LOG("child status %#x: %s", o->status, o->msg);
	ASSERT_EQ(0, o->err) TH_LOG("start: %s (%s)", strerror(-o->err), o->msg);
	/* the child is gone; its own pages went with it, the rings stay */
	after = cg_read(self->cg, "memory.current", NULL);
	TH_LOG("%u rings of %u KiB: memory.current %lld -> %lld KiB",
	       self->cpus, RING_SIZE >> 10, (long long)before >> 10,
	       (long long)after >> 10);
	EXPECT_LE(before + (int64_t)self->rings, after);
	/* and not much more: a netlink socket, a process's leftovers */
	EXPECT_GE(before + (int64_t)(self->rings + self->rings / 8 + 2 * MIB),
		  after);
	stop_session();
	munmap(o, sizeof(*o));
}

TEST_F_TIMEOUT(memcg, a_cgroup_too_small_is_refused_without_an_oom_kill, 120)
{
	char max[32];
	int64_t after;

	ASSERT_EQ(0, set_opt(BFT_OPT_BUF_SIZE, RING_SIZE));
	/* room for all rings but half of the last: some fit, one does not */
	snprintf(max, sizeof(max), "%llu",
		 (unsigned long long)(self->rings - RING_SIZE / 2));
	ASSERT_EQ(0, cg_write(self->cg, "memory.max", max));
	refused_in(_metadata, self->cg, START, -ENOMEM, "memory cgroup");
	/* the rings that did fit were given back */
	after = cg_read(self->cg, "memory.current", NULL);
	TH_LOG("memory.max %s: memory.current %lld KiB after the refusal",
	       max, (long long)after >> 10);
	EXPECT_GT((int64_t)RING_SIZE / 2, after);
}

/*
 * A resize from a cgroup with little room left: past max_ring_mem it is
 * -ERANGE before anything is allocated (an allocation first would have
 * been -ENOMEM); under the cap, the cgroup refuses it with text.
 */
TEST_F_TIMEOUT(memcg, a_resize_meets_max_ring_mem_before_the_cgroup, 120)
{
	struct outcome *o;
	char max[32];
	int64_t before;

	ASSERT_EQ(0, set_opt(BFT_OPT_BUF_SIZE, 4096));
	ASSERT_EQ(0, set_opt(BFT_OPT_MAX_RING_MEM, 1));
	o = run_in(self->cg, START);
	ASSERT_NE(NULL, o);
	ASSERT_EQ(0, o->err) TH_LOG("start: %s (%s)", strerror(-o->err), o->msg);
	munmap(o, sizeof(*o));
	stop_session();
	ASSERT_EQ(4096, ring_size());
	before = cg_read(self->cg, "memory.current", NULL);
	snprintf(max, sizeof(max), "%llu", (unsigned long long)before + MIB);
	ASSERT_EQ(0, cg_write(self->cg, "memory.max", max));

	refused_in(_metadata, self->cg, SET_BUF, -ERANGE, "max_ring_mem");
	ASSERT_EQ(0, set_opt(BFT_OPT_MAX_RING_MEM, 1024));
	refused_in(_metadata, self->cg, SET_BUF, -ENOMEM, "memory cgroup");
	EXPECT_EQ(4096, ring_size());
	EXPECT_GE(before + (int64_t)MIB, cg_read(self->cg, "memory.current", NULL));
}

TEST_HARNESS_MAIN
