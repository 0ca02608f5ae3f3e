// SPDX-License-Identifier: GPL-2.0
/*
 * BFT_CMD_ATTACH rejections.  Each bad request gets the errno the contract
 * names, an extack text that says what is wrong, and, since the batch is
 * checked before anything is registered, leaves nothing attached.  The bad
 * probe sits at index 1 behind a good one, so the test also sees that the
 * text names the right index and that the good probe was not kept.
 */
#include <ctype.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"
#include "calltree_shape.h"

FIXTURE(attach) {
	struct bst_session s;
	struct bst_proc target;
	char *exe;			/* the calltree executable */
	char *lib;			/* libbftgt.so */
	char *dir;			/* the targets directory */
	struct bft_nl_probe good;	/* ct_a */
	struct bft_nl_probe good2;	/* ct_b */
};

FIXTURE_SETUP(attach)
{
	struct bst_fn fns[] = {
		{ NULL, CT_FN_A, 1 },
		{ NULL, CT_FN_B, 2 },
	};
	struct bft_nl_probe probes[2];

	ASSERT_EQ(0, bst_session_open(&self->s));
	self->exe = bst_target_path("calltree");
	self->lib = bst_target_path("libbftgt.so");
	self->dir = bst_target_path("");
	ASSERT_NE(NULL, self->exe);
	ASSERT_NE(NULL, self->lib);
	ASSERT_NE(NULL, self->dir);
	fns[0].file = fns[1].file = self->exe;
	ASSERT_EQ(0, bst_resolve(fns, 2, probes));
	self->good = probes[0];
	self->good2 = probes[1];
	ASSERT_EQ(0, bst_proc_start(&self->target, "calltree", NULL, false, 10000));
}

FIXTURE_TEARDOWN(attach)
{
	bst_session_close(&self->s);
	bst_proc_kill(&self->target);
	free(self->exe);
	free(self->lib);
	free(self->dir);
}

/* Nothing attached: no probe in the status nor in the methods dump. */
static void expect_nothing_attached(struct __test_metadata *_metadata,
				    struct bst_session *s)
{
	struct bft_nl_status st;
	size_t live, gone;

	ASSERT_EQ(0, bft_nl_get_status(s->nl, &st));
	EXPECT_EQ(0, st.nr_probes);
	EXPECT_EQ(0, st.nr_targets);
	bft_nl_status_free(&st);
	ASSERT_EQ(0, bst_count_methods(s, 0, &live, &gone));
	EXPECT_EQ(0, live);
}

/* Whether text holds the decimal number n as a word of its own. */
static bool mentions_number(const char *text, unsigned int n)
{
	char want[16];
	size_t len = (size_t)snprintf(want, sizeof(want), "%u", n);

	for (const char *p = text; (p = strstr(p, want)); p++) {
		bool before = p == text || !isdigit((unsigned char)p[-1]);
		bool after = !isdigit((unsigned char)p[len]);

		if (before && after)
			return true;
	}
	return false;
}

/* Attach {good, bad} to tgid; the errno, with the text logged. */
static int attach_pair(struct bst_session *s, pid_t tgid,
		       const struct bft_nl_probe *good,
		       const struct bft_nl_probe *bad)
{
	struct bft_nl_probe probes[2] = { *good, *bad };
	int results[2] = { 0, 0 };

	return bft_nl_attach(s->nl, (uint32_t)tgid, probes, 2, results);
}

#define EXPECT_REJECTED(errno_, ...)						\
	do {									\
		const char *msg_ = bft_nl_errmsg(self->s.nl);			\
		EXPECT_EQ(-(errno_), err);					\
		EXPECT_TRUE(BST_MENTIONS(msg_, __VA_ARGS__));			\
		EXPECT_TRUE(mentions_number(msg_, 1))				\
			TH_LOG("the text should name probe index 1");		\
		expect_nothing_attached(_metadata, &self->s);			\
	} while (0)

TEST_F(attach, attach_rejects_unknown_tgid)
{
	pid_t gone = fork();
	int err;

	ASSERT_LE(0, gone);
	if (gone == 0)
		_exit(0);
	ASSERT_EQ(gone, waitpid(gone, NULL, 0));
	/* gone is free now (pid reuse within this test is not plausible). */
	err = bft_nl_attach(self->s.nl, (uint32_t)gone, &self->good, 1, NULL);
	EXPECT_EQ(-ESRCH, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "process", "tgid",
				 "pid", "target"));
	expect_nothing_attached(_metadata, &self->s);
}

TEST_F(attach, attach_rejects_thread_id_that_is_no_tgid)
{
	/* A thread's id is a pid but names no process. */
	static const char *const args[] = { "-t", "2", "-d", "1000", NULL };
	struct bst_proc sp;
	int err;

	ASSERT_EQ(0, bst_proc_start(&sp, "spinner", args, true, 10000));
	ASSERT_NE(sp.pid, sp.shm->tids[1]);
	self->good.path = self->exe;
	err = bft_nl_attach(self->s.nl, (uint32_t)sp.shm->tids[1], &self->good,
			    1, NULL);
	bst_proc_kill(&sp);
	EXPECT_EQ(-ESRCH, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "process", "tgid",
				 "pid", "target"));
	expect_nothing_attached(_metadata, &self->s);
}

TEST_F(attach, attach_rejects_missing_path)
{
	char *missing = bst_target_path("no-such-file");
	struct bft_nl_probe bad = self->good;
	int err;

	bad.path = missing;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(ENOENT, "exist", "no such", "not found", "path");
	free(missing);
}

TEST_F(attach, attach_rejects_directory)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.path = self->dir;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EISDIR, "directory");
}

TEST_F(attach, attach_rejects_non_regular_file)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.path = "/dev/null";
	bad.offset = 0;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "regular", "file");
}

TEST_F(attach, attach_rejects_non_elf_file)
{
	char *txt = bst_target_path("not_elf.bin");
	struct bft_nl_probe bad = self->good;
	int err;

	bad.path = txt;
	bad.offset = 4;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(ENOEXEC, "elf");
	free(txt);
}

TEST_F(attach, attach_rejects_offset_past_end_of_file)
{
	struct bft_nl_probe bad = self->good;
	struct stat sb;
	int err;

	ASSERT_EQ(0, stat(self->exe, &sb));
	bad.offset = (uint64_t)sb.st_size + 16;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(ERANGE, "end", "size", "past", "beyond", "range");
}

/*
 * x86 has no alignment requirement for a breakpoint (every offset is
 * "aligned"), so on x86 this is the contract's misaligned case: an offset
 * that lies in no executable segment.
 */
TEST_F(attach, attach_rejects_offset_outside_executable_segment)
{
	struct bft_nl_probe bad = self->good;
	int err;

	ASSERT_EQ(0, bst_nonexec_offset(self->exe, &bad.offset));
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "exec", "segment", "text", "code");
}

TEST_F(attach, attach_rejects_return_flag_without_entry)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.flags = BFT_PF_RETURN;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "flag", "entry");
}

TEST_F(attach, attach_rejects_unknown_flag)
{
	struct bft_nl_probe bad = self->good;
	int err;

	/* the lowest bit that is neither a record flag nor a hook */
	bad.flags = BFT_PF_ALL | ((BFT_PF_ALL | BFT_PF_HOOKS) + 1);
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "flag", "reserved", "bit");
}

TEST_F(attach, attach_rejects_two_hooks_in_one_probe)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.flags = BFT_PF_HOOK_UNWIND | BFT_PF_HOOK_CATCH;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "hook");
}

TEST_F(attach, attach_rejects_flags_that_record_nothing)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.flags = 0;
	err = attach_pair(&self->s, self->target.pid, &self->good2, &bad);
	EXPECT_REJECTED(EINVAL, "nothing");
}

TEST_F(attach, attach_rejects_same_offset_twice_in_batch)
{
	struct bft_nl_probe bad = self->good;
	int err;

	bad.method_id = 99;	/* another id, same (file, offset) */
	err = attach_pair(&self->s, self->target.pid, &self->good, &bad);
	EXPECT_REJECTED(EEXIST, "already", "twice", "duplicate", "exist");
}

TEST_F(attach, attach_rejects_duplicate_attach)
{
	struct bft_nl_probe again = self->good;
	struct bft_nl_status st;
	int err;

	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   &self->good, 1, NULL))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	again.method_id = 98;
	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, &again, 1,
			    NULL);
	EXPECT_EQ(-EEXIST, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "already",
				 "duplicate", "exist"));
	/* The first attach stands, alone. */
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(1, st.nr_probes);
	EXPECT_EQ(1, st.nr_targets);
	bft_nl_status_free(&st);
}

TEST_F(attach, attach_rejects_method_id_of_another_function)
{
	struct bft_nl_probe clash = self->good2;
	struct bft_nl_status st;
	int err;

	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   &self->good, 1, NULL));
	clash.method_id = self->good.method_id;
	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, &clash, 1,
			    NULL);
	EXPECT_EQ(-EEXIST, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "id", "use",
				 "exist"));
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(1, st.nr_probes);
	bft_nl_status_free(&st);
}

TEST_F(attach, attach_rejects_more_probes_than_max_probes)
{
	struct bst_fn fns[] = {
		{ self->exe, CT_FN_A, 1 }, { self->exe, CT_FN_B, 2 },
		{ self->exe, CT_FN_C, 3 },
	};
	struct bft_nl_probe probes[3];
	struct bft_nl_status st;
	int err;

	ASSERT_EQ(0, bst_resolve(fns, 3, probes));
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_MAX_PROBES, 2));
	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, probes, 3,
			    NULL);
	EXPECT_EQ(-E2BIG, err);
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "max", "too many",
				 "limit", "exceed"));
	expect_nothing_attached(_metadata, &self->s);

	/* At the limit is fine; one more, in a later request, is not. */
	ASSERT_EQ(0, bft_nl_attach(self->s.nl, (uint32_t)self->target.pid,
				   probes, 2, NULL))
		TH_LOG("%s", bft_nl_errmsg(self->s.nl));
	err = bft_nl_attach(self->s.nl, (uint32_t)self->target.pid, &probes[2],
			    1, NULL);
	EXPECT_EQ(-E2BIG, err);
	ASSERT_EQ(0, bft_nl_get_status(self->s.nl, &st));
	EXPECT_EQ(2, st.nr_probes);
	bft_nl_status_free(&st);
	/* The session reset detaches, then restores MAX_PROBES. */
}

/* In a child: become nobody, try to attach; exit 0 iff the errno is want. */
static void child_attach_as(uid_t uid, const struct bft_nl_probe *p,
			    pid_t tgid, int want)
{
	struct bft_nl *nl;
	int err;

	if (setgid(uid) || setuid(uid))
		_exit(10);
	if (bft_nl_open(&nl, NULL, 0))
		_exit(11);
	err = bft_nl_attach(nl, (uint32_t)tgid, p, 1, NULL);
	if (err != want) {
		fprintf(stderr, "# attach as uid %u: %d (%s), want %d\n", uid,
			err, bft_nl_errmsg(nl), want);
		_exit(12);
	}
	_exit(0);
}

TEST_F(attach, attach_rejects_caller_without_admin)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0)
		child_attach_as(65534, &self->good, self->target.pid, -EPERM);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	expect_nothing_attached(_metadata, &self->s);
}

TEST_F(attach, attach_rejects_caller_without_sys_ptrace)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0, status;
	pid_t pid;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope < 1)
		SKIP(return, "ptrace policy lets a same-uid process attach here");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Keep CAP_SYS_ADMIN, drop CAP_SYS_PTRACE: the spinner is
		 * no descendant of this child, so ptrace policy (Yama's
		 * relational scope, checked above) refuses, with text. */
		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3,
		};
		struct __user_cap_data_struct d[2];
		struct bft_nl *nl;
		int err;

		if (syscall(SYS_capget, &h, d))
			_exit(10);
		d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
		d[CAP_SYS_PTRACE / 32].permitted &= ~(1u << (CAP_SYS_PTRACE % 32));
		if (syscall(SYS_capset, &h, d))
			_exit(11);
		if (bft_nl_open(&nl, NULL, 0))
			_exit(12);
		err = bft_nl_attach(nl, (uint32_t)self->target.pid, &self->good,
				    1, NULL);
		fprintf(stderr, "# attach without CAP_SYS_PTRACE: %d \"%s\"\n",
			err, bft_nl_errmsg(nl));
		if (err != -EPERM)
			_exit(13);
		_exit(bft_nl_errmsg(nl)[0] ? 0 : 14);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child step %d (13: not -EPERM, 14: no extack text)",
		       WEXITSTATUS(status));
	expect_nothing_attached(_metadata, &self->s);
}

TEST_F(attach, detach_rejects_unknown_target)
{
	EXPECT_EQ(-ENOENT, bft_nl_detach(self->s.nl, (uint32_t)self->target.pid));
	EXPECT_TRUE(BST_MENTIONS(bft_nl_errmsg(self->s.nl), "target", "no such",
				 "not", "attached"));
}

TEST_HARNESS_MAIN
