/* SPDX-License-Identifier: GPL-2.0 */
/* bfhq --http: the live viewer's server (http.c). */
#ifndef BFHQ_HTTP_H
#define BFHQ_HTTP_H

struct hq_http;

/*
 * Under the output directory: the JSON lines (bfhq.1, --json) that
 * bfhq --counters records for the page, which plots them.
 */
#define HQ_COUNTERS_FILE	"counters.jsonl"

/*
 * Serve the page and the live files of outdir's traces on host:port (port
 * 0: any free one, logged) from a thread of its own.  NULL on failure,
 * said in the log.
 */
struct hq_http *hq_http_start(const char *host, unsigned int port,
			      const char *outdir);
/* The port it listens on. */
unsigned int hq_http_port(const struct hq_http *h);
/* How many event streams are open (their state not yet freed). */
unsigned int hq_http_viewers(struct hq_http *h);
/* Close every viewer's stream, stop the thread, free. */
void hq_http_stop(struct hq_http *h);

#endif /* BFHQ_HTTP_H */
