// SPDX-License-Identifier: GPL-2.0
/*
 * What the poll loop of main.c and a caller without sockets (the unit
 * tests, the fuzz harness) share: the clock, the log, and taking down
 * connections and traces.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bft_util.h"
#include "hq.h"

bool hq_log_quiet;

uint64_t hq_now_ms(void)
{
	return bft_mono_ms();
}

void hq_log(const char *fmt, ...)
{
	va_list ap;

	if (hq_log_quiet)
		return;
	va_start(ap, fmt);
	bft_vlog("bfhq", fmt, ap);
	va_end(ap);
}

void hq_bprintf(struct bft_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || bft_buf_reserve(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void hq_reap(struct hq *hq)
{
	unsigned int i, k;

	for (i = 0, k = 0; i < hq->nconns; i++) {
		struct conn *c = hq->conns[i];

		if (!c->dead) {
			hq->conns[k++] = c;
			continue;
		}
		if (c->trace)
			hq_trace_conn_closed(hq, c->trace, c);
		if (c->fd >= 0)
			close(c->fd);
		bft_buf_free(&c->in);
		bft_buf_free(&c->out);
		free(c);
	}
	hq->nconns = k;
	/* a trace that ended is on disk: nothing of it stays here */
	for (i = 0, k = 0; i < hq->ntraces; i++) {
		if (hq->traces[i]->finished)
			hq_trace_free(hq->traces[i]);
		else
			hq->traces[k++] = hq->traces[i];
	}
	hq->ntraces = k;
}

void hq_free(struct hq *hq)
{
	unsigned int i;

	for (i = 0; i < hq->ntraces; i++)
		hq_trace_finish(hq, hq->traces[i]);
	for (i = 0; i < hq->nconns; i++)
		hq->conns[i]->dead = true;
	hq_reap(hq);
	for (i = 0; i < hq->ntraces; i++)
		hq_trace_free(hq->traces[i]);
	free(hq->traces);
	free(hq->conns);
	hq->traces = NULL;
	hq->conns = NULL;
	hq->ntraces = hq->nconns = 0;
}
