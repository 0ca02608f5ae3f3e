// SPDX-License-Identifier: GPL-2.0
/*
 * bst_bpf: the BPF backend in the selftests (the header's "the BPF
 * backend").  A session of the tests' own beside any real one, a test
 * tracing its own functions, the choice between the backends for a test
 * that runs on both, and collecting the BPF rings into a bst_trace.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bft_selftest.h"
#include "bst_internal.h"

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
	/* an inline-only run needs no kernel feature, and takes no lock */
	if (only && !strcmp(only, "inline")) {
		snprintf(why, len, "BFT_BACKEND=inline: the %s variants do not "
			 "run", bpf ? "BPF backend's" : "module's");
		return 1;
	}
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

int bst_bpf_collect(struct bft_bpf *b, int quiet_ms, int max_ms,
		    struct bst_trace *t)
{
	struct bft_nl_caps caps;
	struct bft_bpf_rings *r;
	struct bst_bufs bb;
	ssize_t got;
	int err;

	memset(t, 0, sizeof(*t));
	bft_bpf_get_caps(b, &caps);
	err = bst_bufs_init(&bb, caps.nr_cpus);
	if (!err)
		err = bft_bpf_rings_open(b, &r, bst_bufs_append, &bb);
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
	bst_bufs_free(&bb);
	return err;
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
