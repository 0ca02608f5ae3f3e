// SPDX-License-Identifier: GPL-2.0
/*
 * bst_session: a test's control session with the module (the header's
 * "a control session").  Opening it, the mode commands and options, and the
 * reset that hands the next test an idle module with the options it was
 * found with.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture/bft_rings.h"
#include "bft_selftest.h"
#include "bst_internal.h"

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

/* Whether 127.0.0.1:port can be bound now, as a listener would (TCP with
 * SO_REUSEADDR, as bfhq binds) or a datagram socket (UDP). */
static bool port_free(int type, int port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0), one = 1;
	bool ok;

	if (fd < 0)
		return false;
	if (type == SOCK_STREAM)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = !bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return ok;
}

/*
 * Below the kernel's ephemeral range (32768 up, by default), where no
 * outgoing socket takes a port by itself, and free for TCP and UDP alike
 * (bfhq --udp binds both): a port chosen blindly in 20000-39999 was once
 * held by another socket, and bfhq could not start.
 */
int bst_run_port(int salt)
{
	int start = (getpid() * salt + (int)(bst_now_ns() % 997)) % 12000;

	for (int i = 0; i < 12000; i++) {
		int port = 20000 + (start + i * 7) % 12000;

		if (port_free(SOCK_STREAM, port) && port_free(SOCK_DGRAM, port))
			return port;
	}
	return 20000 + start;
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
