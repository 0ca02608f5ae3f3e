/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Driving bfhq's receive path without sockets, for its unit tests: an
 * agent that says hello on a control and a data connection, then sends
 * messages (protocol version 2) through hq_conn_feed().
 */
#ifndef BFT_TEST_HQ_FEED_H
#define BFT_TEST_HQ_FEED_H

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bft_test.h"
#include "hq.h"

/*
 * A quiet bfhq without sockets writing into a new directory dir (64
 * bytes, /tmp/bft-hq-XXXXXX): 0, or -1 if the directory was not made.
 */
static inline int hq_test_init(struct hq *hq, char *dir)
{
	hq_log_quiet = true;
	snprintf(dir, 64, "/tmp/bft-hq-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	memset(hq, 0, sizeof(*hq));
	hq->listen_fd = hq->ctl_fd = -1;
	hq->o.outdir = dir;
	hq->o.gap_ms = 2000;
	bfp_config_init(&hq->o.config);
	return 0;
}

/* Free what hq_test_init() made, and its directory unless kept. */
static inline void hq_test_fini(struct hq *hq, const char *dir)
{
	hq_free(hq);
	bfp_config_free(&hq->o.config);
	if (!getenv("BFT_KEEP_FIXTURES"))
		bft_test_rmtree(dir);
}

static inline void hq_test_send(struct hq *hq, struct conn *c,
				const struct bfp_msg *m)
{
	struct bft_buf b = { 0 };

	if (!bfp_encode(&b, 2, m))
		hq_conn_feed(hq, c, b.data, b.len, false);
	bft_buf_free(&b);
}

/* An event at time seq ms. */
static inline void hq_test_event(struct hq *hq, struct conn *c, uint8_t id,
				 uint32_t seq, uint32_t method,
				 uint16_t thread)
{
	struct bfp_msg m = { .id = id, .seq = seq, .method = method,
			     .time = seq, .thread = thread };

	hq_test_send(hq, c, &m);
}

/* A MapMethodSignature, MapThreadName or MapException of id n. */
static inline void hq_test_map(struct hq *hq, struct conn *c, uint8_t id,
			       uint32_t n, const char *name)
{
	struct bfp_msg m = { .id = id, .method = n, .thread = (uint16_t)n,
			     .exception = n, .str = name,
			     .str_len = strlen(name) };

	hq_test_send(hq, c, &m);
}

/*
 * The agent's hello on a new control connection, then a data hello on
 * another: its trace, or NULL.
 */
static inline struct trace *hq_test_connect(struct hq *hq, struct conn **ctl,
					    struct conn **data)
{
	uint8_t hello[2] = { BFP_HELLO, 2 }, dhello[2] = { BFP_DATA_HELLO };

	*ctl = hq_conn_add(hq, -1, CONN_GREETING);
	if (!*ctl)
		return NULL;
	hq_conn_feed(hq, *ctl, hello, 2, false);
	if (!(*ctl)->trace)
		return NULL;
	*data = hq_conn_add(hq, -1, CONN_GREETING);
	if (!*data)
		return NULL;
	dhello[1] = (*ctl)->trace->run_id;
	hq_conn_feed(hq, *data, dhello, 2, false);
	return (*data)->trace == (*ctl)->trace ? (*ctl)->trace : NULL;
}

#endif /* BFT_TEST_HQ_FEED_H */
