// SPDX-License-Identifier: GPL-2.0
/*
 * A netlink fuzzer for the bftrace family: random and mutated requests
 * (every command and some that do not exist, random attributes, nests,
 * lengths and flags), as root, for BFT_FUZZ_SECONDS (60 by default;
 * `make fuzz-guest` runs 300).  The kernel log must stay free of warnings
 * (scripts/guest-run checks it), the module must answer and unload after.
 *
 * Only the sacrificial spinner is ever a target: a tgid the fuzzer puts in
 * a request is rewritten to the spinner's or to one no process has, so
 * random probes land in a process made to take them.  Ring sizes are kept
 * small so the guest does not run out of memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include "kselftest_harness.h"
#include "bft_selftest.h"

#define NO_SUCH_TGID	0x3ffffff0u
#define MAX_MSG		4096

struct fuzz {
	struct mnl_socket *sock;
	uint16_t family;
	unsigned int seed;
	uint32_t tgid;
	const char *path;	/* the spinner: a real ELF file */
	uint64_t off;		/* spin_fn's offset in it */
	unsigned long sent, acked_ok, acked_err, replies, by_cmd[BFT_CMD_MAX + 3];
};

static uint32_t rnd(struct fuzz *f, uint32_t n)
{
	return n ? (uint32_t)rand_r(&f->seed) % n : 0;
}

/* A value a handler may treat specially, or noise. */
static void fill_payload(struct fuzz *f, uint8_t *p, size_t len)
{
	static const uint64_t edge[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0xffff, 0x10000, 0x7fffffff,
		0x80000000, 0xffffffff, 4096, 65536, ~0ull, 1ull << 63,
	};
	uint64_t v;

	switch (rnd(f, 4)) {
	case 0:
		v = edge[rnd(f, sizeof(edge) / sizeof(edge[0]))];
		memset(p, 0, len);
		memcpy(p, &v, len < 8 ? len : 8);
		break;
	case 1:
		if (len) {
			snprintf((char *)p, len, "%s", rnd(f, 2) ? f->path :
				 "/proc/self/exe");
		}
		break;
	default:
		for (size_t i = 0; i < len; i++)
			p[i] = (uint8_t)rnd(f, 256);
	}
}

static void put_random_attrs(struct fuzz *f, struct nlmsghdr *nlh, int depth)
{
	unsigned int n = rnd(f, 6);

	for (unsigned int i = 0; i < n; i++) {
		uint16_t type = (uint16_t)rnd(f, BFT_A_MAX + 3);
		uint8_t buf[96];
		size_t len;

		if (nlh->nlmsg_len > MAX_MSG - 512)
			return;
		if (depth < 3 && !rnd(f, 4)) {
			struct nlattr *nest = mnl_attr_nest_start(nlh, type);

			put_random_attrs(f, nlh, depth + 1);
			mnl_attr_nest_end(nlh, nest);
			continue;
		}
		len = rnd(f, 4) ? (size_t[]){ 0, 1, 4, 8, 16 }[rnd(f, 5)] :
				  rnd(f, sizeof(buf));
		fill_payload(f, buf, len);
		mnl_attr_put(nlh, type, len, buf);
	}
}

/* A well-formed attach of spin_fn, to be mutated. */
static void put_attach(struct fuzz *f, struct nlmsghdr *nlh)
{
	struct nlattr *all, *one;
	unsigned int n = 1 + rnd(f, 3);

	mnl_attr_put_u32(nlh, BFT_A_TGID, f->tgid);
	all = mnl_attr_nest_start(nlh, BFT_A_PROBES);
	for (unsigned int i = 0; i < n; i++) {
		one = mnl_attr_nest_start(nlh, BFT_A_PROBE);
		mnl_attr_put_strz(nlh, BFT_P_PATH, f->path);
		mnl_attr_put_u64(nlh, BFT_P_OFFSET,
				 rnd(f, 2) ? f->off : f->off + rnd(f, 64));
		mnl_attr_put_u32(nlh, BFT_P_METHOD_ID, rnd(f, 8));
		mnl_attr_put_u32(nlh, BFT_P_FLAGS, rnd(f, 4));
		mnl_attr_put_strz(nlh, BFT_P_NAME, "fuzz");
		mnl_attr_nest_end(nlh, one);
	}
	mnl_attr_nest_end(nlh, all);
}

/*
 * Keep the fuzzer's reach to the spinner and to small rings, whatever
 * the mutations made of the request.
 */
static void tame(struct fuzz *f, struct nlmsghdr *nlh)
{
	struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(*g)) {
		uint16_t type = mnl_attr_get_type(a);
		uint16_t len = mnl_attr_get_payload_len(a);

		if (type == BFT_A_TGID && len >= 4)
			*(uint32_t *)mnl_attr_get_payload(a) =
				rnd(f, 4) ? f->tgid : NO_SUCH_TGID;
		/* no option may allocate more than 64 KiB a ring */
		if (type == BFT_A_OPT_VALUE && len >= 8 &&
		    *(uint64_t *)mnl_attr_get_payload(a) > 65536)
			*(uint64_t *)mnl_attr_get_payload(a) &= 0xffff;
	}
}

static void mutate(struct fuzz *f, struct nlmsghdr *nlh)
{
	uint8_t *b = (uint8_t *)nlh;
	unsigned int n = rnd(f, 4);
	size_t hdr = sizeof(*nlh) + sizeof(struct genlmsghdr);

	for (unsigned int i = 0; i < n && nlh->nlmsg_len > hdr; i++) {
		size_t at = hdr + rnd(f, nlh->nlmsg_len - hdr);

		b[at] ^= (uint8_t)(1u << rnd(f, 8));
	}
	/* a length that lies, now and then */
	if (!rnd(f, 16))
		nlh->nlmsg_len = (uint32_t)(hdr + rnd(f, nlh->nlmsg_len - hdr + 1));
}

static void drain(struct fuzz *f, int wait_ms)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct pollfd pfd = { mnl_socket_get_fd(f->sock), POLLIN, 0 };

	while (poll(&pfd, 1, wait_ms) > 0) {
		ssize_t n = mnl_socket_recvfrom(f->sock, buf, sizeof(buf));
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		int left = (int)n;

		if (n <= 0)
			return;
		for (; mnl_nlmsg_ok(h, left); h = mnl_nlmsg_next(h, &left)) {
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

				if (e->error)
					f->acked_err++;
				else
					f->acked_ok++;
			} else {
				f->replies++;
			}
		}
		wait_ms = 0;
	}
}

static void one_message(struct fuzz *f)
{
	char buf[MAX_MSG];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;
	uint8_t cmd = (uint8_t)rnd(f, BFT_CMD_MAX + 3);

	nlh->nlmsg_type = f->family;
	nlh->nlmsg_flags = NLM_F_REQUEST | (rnd(f, 8) ? NLM_F_ACK : 0);
	if (!rnd(f, 6) || cmd == BFT_CMD_GET_METHODS)
		nlh->nlmsg_flags |= NLM_F_DUMP;
	nlh->nlmsg_seq = (uint32_t)f->sent;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = rnd(f, 8) ? BFT_GENL_VERSION : (uint8_t)rnd(f, 256);
	if (cmd == BFT_CMD_ATTACH && rnd(f, 2))
		put_attach(f, nlh);
	else if ((cmd == BFT_CMD_SET_OPT || cmd == BFT_CMD_GET_OPT) && rnd(f, 2)) {
		mnl_attr_put_u32(nlh, BFT_A_OPT_ID, rnd(f, BFT_OPT_MAX + 2));
		mnl_attr_put_u64(nlh, BFT_A_OPT_VALUE, rnd(f, 70000));
	} else if (cmd == BFT_CMD_START && rnd(f, 2)) {
		mnl_attr_put(nlh, BFT_A_PERSIST, 0, NULL);
	}
	put_random_attrs(f, nlh, 0);
	if (rnd(f, 2))
		mutate(f, nlh);
	tame(f, nlh);
	f->by_cmd[cmd < BFT_CMD_MAX + 3 ? cmd : 0]++;
	if (mnl_socket_sendto(f->sock, nlh, nlh->nlmsg_len) >= 0)
		f->sent++;
	drain(f, (nlh->nlmsg_flags & NLM_F_ACK) ? 20 : 0);
}

FIXTURE(fuzz) {
	struct bst_session s;
	struct bst_proc target;
	char *exe;
};

FIXTURE_SETUP(fuzz)
{
	ASSERT_EQ(0, bst_session_open(&self->s));
	self->exe = bst_target_path("spinner");
	ASSERT_NE(NULL, self->exe);
}

FIXTURE_TEARDOWN(fuzz)
{
	bst_proc_kill(&self->target);
	if (!bst_module_loaded() && bst_ko_path())
		bst_insmod(bst_ko_path());
	if (!self->s.nl && bst_module_loaded())
		bst_session_open(&self->s);
	bst_session_close(&self->s);
	free(self->exe);
}

static const char *const spin_args[] = { "-d", "2000", NULL };

TEST_F_TIMEOUT(fuzz, random_requests_break_nothing, 900)
{
	const char *env = getenv("BFT_FUZZ_SECONDS");
	unsigned int secs = env ? (unsigned int)atoi(env) : 60;
	struct bst_fn fn = { self->exe, SPIN_FN, 1 };
	struct bft_nl_probe p;
	struct fuzz f = { 0 };
	uint64_t end;

	ASSERT_LT(0, secs);
	ASSERT_GE(840, secs) TH_LOG("the test's own timeout is 900 s");
	ASSERT_EQ(0, bst_resolve(&fn, 1, &p));
	f.path = self->exe;
	f.off = p.offset;
	f.family = bft_nl_family_id(self->s.nl);
	f.seed = (unsigned int)time(NULL);
	TH_LOG("seed %u, %u s", f.seed, secs);
	f.sock = mnl_socket_open(NETLINK_GENERIC);
	ASSERT_NE(NULL, f.sock);
	ASSERT_EQ(0, mnl_socket_bind(f.sock, 0, MNL_SOCKET_AUTOPID));
	ASSERT_EQ(0, bst_set_opt(&self->s, BFT_OPT_BUF_SIZE, 65536));
	ASSERT_EQ(0, bst_proc_start(&self->target, "spinner", spin_args, false,
				    10000));
	f.tgid = (uint32_t)self->target.pid;

	end = bst_now_ns() + (uint64_t)secs * 1000000000ull;
	while (bst_now_ns() < end) {
		for (int i = 0; i < 100; i++)
			one_message(&f);
		/* a random probe may have killed the spinner: a new one */
		kill(self->target.pid, SIGCONT);
		if (!bst_proc_alive(&self->target)) {
			bst_proc_kill(&self->target);
			ASSERT_EQ(0, bst_proc_start(&self->target, "spinner",
						    spin_args, false, 10000));
			f.tgid = (uint32_t)self->target.pid;
		}
	}
	drain(&f, 200);
	mnl_socket_close(f.sock);
	TH_LOG("%lu requests: %lu acked ok, %lu refused, %lu replies",
	       f.sent, f.acked_ok, f.acked_err, f.replies);
	for (unsigned int c = 0; c < BFT_CMD_MAX + 3; c++)
		TH_LOG("  cmd %u (%s): %lu", c, bft_cmd_name(c), f.by_cmd[c]);
	EXPECT_LT(1000, f.sent);
	EXPECT_LT(0, f.acked_ok);
	EXPECT_LT(0, f.acked_err);

	/* still answering, and still unloadable */
	ASSERT_EQ(0, bst_reset(&self->s));
	bft_nl_close(self->s.nl);
	self->s.nl = NULL;
	bst_proc_kill(&self->target);
	if (bst_ko_path()) {
		ASSERT_EQ(0, bst_rmmod());
		ASSERT_EQ(0, bst_insmod(bst_ko_path()));
	}
}

TEST_HARNESS_MAIN
