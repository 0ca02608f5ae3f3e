/* SPDX-License-Identifier: GPL-2.0 */
/* bfhq --http: the live viewer's server (http.c). */
#ifndef BFHQ_HTTP_H
#define BFHQ_HTTP_H

#include <stdbool.h>

struct hq_http;

/*
 * Under the output directory: the JSON lines (bfhq.1, --json) that
 * bfhq --counters records for the page, which plots them.
 */
#define HQ_COUNTERS_FILE	"counters.jsonl"

/*
 * The Host header names a request may carry (a page of another site that
 * DNS-rebinds its name to us carries its own): the bound host's, localhost,
 * 127.0.0.1, [::1], and these; any if any_host.
 */
struct hq_http_names {
	const char *const *names;
	unsigned int n;
	bool any_host;
};

/*
 * Serve the page and the live files of outdir's traces on host:port (port
 * 0: any free one, logged) from a thread of its own; names: NULL for the
 * default ones.  NULL on failure, said in the log.
 */
struct hq_http *hq_http_start(const char *host, unsigned int port,
			      const char *outdir,
			      const struct hq_http_names *names);
/* The port it listens on. */
unsigned int hq_http_port(const struct hq_http *h);
/* How many event streams are open (their state not yet freed). */
unsigned int hq_http_viewers(struct hq_http *h);
/* Close every viewer's stream, stop the thread, free. */
void hq_http_stop(struct hq_http *h);

#endif /* BFHQ_HTTP_H */
