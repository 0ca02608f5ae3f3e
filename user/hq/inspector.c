// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --counters: the inspector side of the counters protocol (seed 003,
 * notes/counters-wire.md).  See inspector.h and bfhq.1.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bft_util.h"
#include "http.h"
#include "inspector.h"

#define IN_MAX	(2 * BFC_MAX_MSG)

void insp_init(struct insp *s, FILE *out, bool json, bool redraw)
{
	memset(s, 0, sizeof(*s));
	s->out = out;
	s->json = json;
	s->redraw = redraw;
}

void insp_reset(struct insp *s)
{
	for (uint32_t i = 0; i < s->nc; i++)
		free(s->c[i].h.name);
	free(s->c);
	s->c = NULL;
	s->nc = 0;
	s->nremove_pending = 0;
	s->in.len = 0;
	s->out_buf.len = 0;
	s->hello = s->bye = false;
	s->err[0] = 0;
}

void insp_free(struct insp *s)
{
	insp_reset(s);
	bft_buf_free(&s->in);
	bft_buf_free(&s->out_buf);
}

static int request(struct insp *s, const struct bfc_msg *m)
{
	return bfc_encode(&s->out_buf, BFC_TO_AGENT, m);
}

int insp_list(struct insp *s)
{
	return request(s, &(struct bfc_msg){ .cmd = BFC_LIST });
}

int insp_add(struct insp *s, const char *spec)
{
	const char *colon = strchr(spec, ':');
	char cat[64];

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(cat))
		return -EINVAL;
	memcpy(cat, spec, (size_t)(colon - spec));
	cat[colon - spec] = 0;
	return request(s, &(struct bfc_msg){ .cmd = BFC_ADD,
					     .name = (char *)colon + 1,
					     .category = cat });
}

int insp_remove(struct insp *s, int16_t index)
{
	if (s->nremove_pending == sizeof(s->pending_remove) /
				  sizeof(s->pending_remove[0]))
		return -ENOBUFS;
	s->pending_remove[s->nremove_pending++] = index;
	return request(s, &(struct bfc_msg){ .cmd = BFC_REMOVE,
					     .index = index });
}

int insp_changes(struct insp *s, bool on)
{
	return request(s, &(struct bfc_msg){ .cmd = BFC_CHANGES,
					     .changes = on });
}

int insp_bye(struct insp *s)
{
	s->bye = true;
	return request(s, &(struct bfc_msg){ .cmd = BFC_BYE });
}

int insp_command(struct insp *s, const char *line)
{
	char *end;
	long v;

	line += strspn(line, " \t");
	if (!strncmp(line, "list", 4))
		return insp_list(s);
	if (!strncmp(line, "bye", 3))
		return insp_bye(s);
	if (!strncmp(line, "add ", 4))
		return insp_add(s, line + 4 + strspn(line + 4, " \t"));
	if (!strcmp(line, "changes on") || !strcmp(line, "changes off"))
		return insp_changes(s, line[9] == 'n');
	if (!strncmp(line, "remove ", 7)) {
		v = strtol(line + 7, &end, 10);
		if (end == line + 7 || v < -1 || v > INT16_MAX)
			return -EINVAL;
		return insp_remove(s, (int16_t)v);
	}
	return -EINVAL;
}

static json_t *header_json(const struct bfc_header *h)
{
	const char *cat = bfc_category_name(h->category);

	return json_pack("{s:i,s:s,s:i,s:s,s:s,s:s,s:s}", "index", h->index,
			 "category", cat ? cat : "?", "category_id",
			 h->category, "name", h->name, "type",
			 bfc_type_name(h->type), "unit", bfc_unit_name(h->unit),
			 "variance", bfc_variance_name(h->variance));
}

/* The JSON lines go to stdout (--json) and to the record (--output). */
static bool wants_json(const struct insp *s)
{
	return s->json || s->record;
}

static void emit(struct insp *s, json_t *j)
{
	FILE *to[2] = { s->json ? s->out : NULL, s->record };

	for (unsigned int i = 0; j && i < 2; i++) {
		if (!to[i])
			continue;
		json_dumpf(j, to[i], JSON_COMPACT);
		fputc('\n', to[i]);
		fflush(to[i]);
	}
	json_decref(j);
}

/* Keep h under its index: Hello's and Add's headers. */
static int keep(struct insp *s, const struct bfc_header *h)
{
	uint32_t i = (uint16_t)h->index;
	struct insp_counter *c;

	if (i >= s->nc) {
		c = realloc(s->c, (i + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		memset(c + s->nc, 0, (i + 1 - s->nc) * sizeof(*c));
		s->c = c;
		s->nc = i + 1;
	}
	c = &s->c[i];
	free(c->h.name);
	memset(c, 0, sizeof(*c));
	c->h = *h;
	c->h.name = strdup(h->name);
	c->used = true;
	return c->h.name ? 0 : -ENOMEM;
}

static void forget(struct insp *s, int16_t index)
{
	for (uint32_t i = 0; i < s->nc; i++)
		if (s->c[i].used && (index == -1 || s->c[i].h.index == index)) {
			free(s->c[i].h.name);
			memset(&s->c[i], 0, sizeof(s->c[i]));
		}
}

static void print_value(FILE *f, const struct insp_counter *c)
{
	if (!c->have)
		fprintf(f, "%16s", "-");
	else if (c->h.type == BFC_TYPE_DOUBLE)
		fprintf(f, "%16.2f", c->value);
	else
		fprintf(f, "%16lld", (long long)c->ivalue);
}

static void table(struct insp *s)
{
	time_t secs = (time_t)(bfc_ticks_to_unix_ns(s->last_ticks) /
			       1000000000);
	struct tm tm;
	char when[32] = "?";

	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	/* home and clear: the table stays where it is, as in top */
	if (s->redraw)
		fputs("\033[H\033[2J", s->out);
	fprintf(s->out, "sample %llu at %s UTC\n%5s  %-10s %-40s %16s  %s\n",
		(unsigned long long)s->samples, when, "INDEX", "CATEGORY",
		"NAME", "VALUE", "UNIT");
	for (uint32_t i = 0; i < s->nc; i++) {
		const struct insp_counter *c = &s->c[i];
		const char *cat = c->used ? bfc_category_name(c->h.category) :
					    NULL;

		if (!c->used)
			continue;
		fprintf(s->out, "%5d  %-10s %-40s ", c->h.index,
			cat ? cat : "?", c->h.name);
		print_value(s->out, c);
		fprintf(s->out, "  %s\n", bfc_unit_name(c->h.unit));
	}
	if (!s->redraw)
		fputc('\n', s->out);
	fflush(s->out);
}

static void on_sample(struct insp *s, const struct bfc_msg *m)
{
	json_t *vals;

	s->samples++;
	s->last_ticks = m->timestamp;
	for (uint32_t i = 0; i < m->nvalues; i++) {
		const struct bfc_value *v = &m->values[i];
		uint32_t k = (uint16_t)v->index;
		struct insp_counter *c = k < s->nc && s->c[k].used ? &s->c[k] :
					 NULL;

		/* a value of a counter never described, or of the wrong size:
		 * counted and left out, the rest is good */
		if (!c || !bfc_value_get(c->h.type, v->data, v->size, &c->value,
					 &c->ivalue)) {
			s->bad_values++;
			continue;
		}
		c->have = true;
	}
	if (!s->json)
		table(s);
	if (!wants_json(s))
		return;
	/* every counter's latest value, whether or not this sample had it
	 * (BFC_CHANGES leaves out what did not change) */
	vals = json_object();
	for (uint32_t k = 0; vals && k < s->nc; k++) {
		const struct insp_counter *c = &s->c[k];
		char key[BFC_MAX_STRING + 80];

		if (!c->used || !c->have)
			continue;
		snprintf(key, sizeof(key), "%s:%s",
			 bfc_category_name(c->h.category) ?: "?", c->h.name);
		json_object_set_new(vals, key, c->h.type == BFC_TYPE_DOUBLE ?
					       json_real(c->value) :
					       json_integer(c->ivalue));
	}
	emit(s, json_pack("{s:s,s:I,s:f,s:I,s:o}", "event", "sample", "n",
			  (json_int_t)s->samples, "time",
			  (double)bfc_ticks_to_unix_ns(m->timestamp) / 1e9,
			  "carried", (json_int_t)m->nvalues, "values", vals));
}

static int on_msg(struct insp *s, const struct bfc_msg *m)
{
	json_t *a;
	uint32_t i;

	if (!s->hello && m->cmd != BFC_HELLO) {
		snprintf(s->err, sizeof(s->err), "message %u before Hello",
			 m->cmd);
		return -EPROTO;
	}
	switch (m->cmd) {
	case BFC_HELLO:
		if (s->hello) {
			snprintf(s->err, sizeof(s->err), "a second Hello");
			return -EPROTO;
		}
		s->hello = true;
		for (i = 0; i < m->nheaders; i++)
			if (keep(s, &m->headers[i]))
				return -ENOMEM;
		if (!s->json) {
			fprintf(s->out, "agent: protocol version %d, %u "
				"counters\n", m->version, m->nheaders);
			fflush(s->out);
		}
		if (!wants_json(s))
			return 0;
		a = json_array();
		for (i = 0; i < m->nheaders; i++)
			json_array_append_new(a, header_json(&m->headers[i]));
		emit(s, json_pack("{s:s,s:i,s:o}", "event", "hello", "version",
				  m->version, "counters", a));
		return 0;
	case BFC_LIST:
		s->lists++;
		if (!s->json) {
			for (i = 0; i < m->ncounters; i++)
				fprintf(s->out, "%-10s %s\n",
					m->counters[i].category,
					m->counters[i].name);
			fflush(s->out);
		}
		if (!wants_json(s))
			return 0;
		a = json_array();
		for (i = 0; i < m->ncounters; i++)
			json_array_append_new(a, json_pack(
				"{s:s,s:s}", "category", m->counters[i].category,
				"name", m->counters[i].name));
		emit(s, json_pack("{s:s,s:o}", "event", "list", "counters", a));
		return 0;
	case BFC_ADD:
		if (m->status == BFC_OK && keep(s, &m->headers[0]))
			return -ENOMEM;
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:s,s:o*}", "event", "add",
					  "status", bfc_status_name(m->status),
					  "counter", m->status == BFC_OK ?
					  header_json(&m->headers[0]) : NULL));
		if (!s->json) {
			fprintf(s->out, "add: %s", bfc_status_name(m->status));
			if (m->status == BFC_OK)
				fprintf(s->out, " %s (index %d)",
					m->headers[0].name,
					m->headers[0].index);
			fputc('\n', s->out);
			fflush(s->out);
		}
		return 0;
	case BFC_REMOVE: {
		int16_t index = -2;

		if (s->nremove_pending) {
			index = s->pending_remove[0];
			memmove(s->pending_remove, s->pending_remove + 1,
				--s->nremove_pending *
				sizeof(s->pending_remove[0]));
		}
		if (m->status == BFC_OK && index >= -1)
			forget(s, index);
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:i,s:s}", "event", "remove",
					  "index", index, "status",
					  bfc_status_name(m->status)));
		if (!s->json) {
			fprintf(s->out, "remove %d: %s\n", index,
				bfc_status_name(m->status));
			fflush(s->out);
		}
		return 0;
	}
	case BFC_SAMPLE:
		on_sample(s, m);
		return 0;
	case BFC_CHANGES:
		if (wants_json(s))
			emit(s, json_pack("{s:s,s:s}", "event", "changes",
					  "status", bfc_status_name(m->status)));
		if (!s->json && m->status != BFC_OK) {
			fprintf(s->out, "changes only: %s\n",
				bfc_status_name(m->status));
			fflush(s->out);
		}
		return 0;
	}
	return 0;
}

int insp_feed(struct insp *s, const void *p, size_t n)
{
	if (bft_buf_append(&s->in, p, n))
		return -ENOMEM;
	while (s->in.len) {
		struct bfc_msg m;
		int r = bfc_decode(s->in.data, s->in.len, BFC_TO_INSPECTOR, &m,
				   s->err, sizeof(s->err));

		if (r == 0 && s->in.len > IN_MAX) {
			snprintf(s->err, sizeof(s->err), "%zu bytes without a "
				 "whole message", s->in.len);
			return -EPROTO;
		}
		if (r <= 0)
			return r;
		r = on_msg(s, &m) ?: r;
		bfc_msg_free(&m);
		if (r < 0)
			return r;
		bft_buf_consume(&s->in, (size_t)r);
	}
	return 0;
}

/* ---- the program ---- */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1,
								   2)));
static void log_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bft_vlog("bfhq", fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bfhq --counters [HOST:]PORT [options]   inspect a counters agent\n"
"\n"
"      --counters [HOST:]PORT  listen there (HOST: 127.0.0.1)\n"
"      --add CATEGORY:NAME     add that counter once the agent said Hello\n"
"      --remove INDEX          remove a counter (-1: every counter)\n"
"      --list                  list the agent's counters (then leave,\n"
"                              unless --samples)\n"
"      --samples N             leave after N samples (say Good Bye)\n"
"      --json                  JSON lines instead of a table\n"
"      --every-value           do not ask the agent to send only the values\n"
"                              that changed (a bftrace extension)\n"
"  -o, --output DIR            also record the JSON lines in\n"
"                              DIR/" HQ_COUNTERS_FILE " (started over)\n"
"      --http [HOST:]PORT      serve the live page, which plots them (HOST\n"
"                              127.0.0.1; PORT 0: any; DIR: bfhq-out)\n"
"      --timeout SECONDS       exit after this long, whatever happens\n"
"  -v, --verbose\n"
"  -h, --help\n"
"Lines on stdin: list, add CATEGORY:NAME, remove INDEX, changes on|off,\n"
"bye.\n");
}

struct iopts {
	char host[256];
	char port[16];
	char http_host[256];
	char http_port[16];
	const char *outdir;
	char **adds;
	unsigned int nadds;
	int16_t removes[64];
	unsigned int nremoves;
	bool list, json, every_value;
	unsigned long samples, timeout_s;
	int verbose;
};

/* [HOST:]PORT into host (256 bytes, kept if none) and port (16). */
static int host_port(const char *arg, const char *what, char *host,
		     char *port)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long v;

	if (colon && !strchr(colon, ']')) {
		snprintf(host, 256, "%.*s", (int)(colon - arg), arg);
		if (host[0] == '[') {
			memmove(host, host + 1, strlen(host));
			host[strcspn(host, "]")] = 0;
		}
		colon++;
	} else {
		colon = arg;
	}
	v = strtol(colon, &end, 10);
	if (end == colon || *end || v < 0 || v > 65535) {
		fprintf(stderr, "bfhq: bad %s port: %s\n", what, colon);
		return -1;
	}
	snprintf(port, 16, "%ld", v);
	return 0;
}

static int parse(struct iopts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "counters", required_argument, NULL, 'C' },
		{ "add", required_argument, NULL, 'a' },
		{ "remove", required_argument, NULL, 'r' },
		{ "list", no_argument, NULL, 'L' },
		{ "samples", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "every-value", no_argument, NULL, 'E' },
		{ "output", required_argument, NULL, 'o' },
		{ "http", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	snprintf(o->host, sizeof(o->host), "127.0.0.1");
	snprintf(o->http_host, sizeof(o->http_host), "127.0.0.1");
	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:vh", lo, NULL)) != -1) {
		char *end;
		long v;

		switch (ch) {
		case 'C':
			if (host_port(optarg, "--counters", o->host, o->port))
				return -1;
			break;
		case 'H':
			if (host_port(optarg, "--http", o->http_host,
				      o->http_port))
				return -1;
			break;
		case 'o':
			o->outdir = optarg;
			break;
		case 'a':
			if (!strchr(optarg, ':')) {
				fprintf(stderr, "bfhq: --add CATEGORY:NAME, "
					"not %s\n", optarg);
				return -1;
			}
			o->adds = realloc(o->adds, (o->nadds + 1) *
					  sizeof(*o->adds));
			if (!o->adds)
				return -1;
			o->adds[o->nadds++] = optarg;
			break;
		case 'r':
			v = strtol(optarg, &end, 10);
			if (end == optarg || *end || v < -1 || v > INT16_MAX ||
			    o->nremoves == 64) {
				fprintf(stderr, "bfhq: bad --remove: %s\n",
					optarg);
				return -1;
			}
			o->removes[o->nremoves++] = (int16_t)v;
			break;
		case 'L':
			o->list = true;
			break;
		case 'n':
			o->samples = strtoul(optarg, &end, 10);
			if (end == optarg || *end) {
				fprintf(stderr, "bfhq: bad --samples: %s\n",
					optarg);
				return -1;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'E':
			o->every_value = true;
			break;
		case 't':
			o->timeout_s = strtoul(optarg, &end, 10);
			if (end == optarg || *end) {
				fprintf(stderr, "bfhq: bad --timeout: %s\n",
					optarg);
				return -1;
			}
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc || !o->port[0]) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static int listen_on(const struct iopts *o)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *ai;
	int fd, one = 1, e = getaddrinfo(o->host, o->port, &hints, &ai);

	if (e) {
		log_line("%s:%s: %s", o->host, o->port, gai_strerror(e));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(fd, 4)) {
		log_line("cannot listen on %s:%s: %s", o->host, o->port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* What the command line asks of every agent, once it said Hello. */
static void ask(struct insp *s, const struct iopts *o)
{
	/* 1000 counters at 10 Hz are 12 KB a sample, mostly unchanged */
	if (!o->every_value)
		insp_changes(s, true);
	for (unsigned int i = 0; i < o->nremoves; i++)
		insp_remove(s, o->removes[i]);
	for (unsigned int i = 0; i < o->nadds; i++)
		insp_add(s, o->adds[i]);
	if (o->list)
		insp_list(s);
}

static bool flush_out(int fd, struct insp *s)
{
	while (s->out_buf.len) {
		ssize_t w = send(fd, s->out_buf.data, s->out_buf.len,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w <= 0)
			return w < 0 && errno == EAGAIN;
		bft_buf_consume(&s->out_buf, (size_t)w);
	}
	return true;
}

/* --output's record, and --http's server on its directory. */
static int open_record(struct iopts *o, struct insp *s, struct hq_http **h)
{
	char path[PATH_MAX];

	if (o->http_port[0] && !o->outdir)
		o->outdir = "bfhq-out";
	if (!o->outdir)
		return 0;
	if (mkdir(o->outdir, 0755) && errno != EEXIST) {
		log_line("cannot make %s: %s", o->outdir, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/" HQ_COUNTERS_FILE, o->outdir);
	s->record = fopen(path, "we");
	if (!s->record) {
		log_line("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	if (o->http_port[0]) {
		*h = hq_http_start(o->http_host,
				   (unsigned int)atoi(o->http_port),
				   o->outdir, NULL);
		if (!*h)
			return -1;
	}
	return 0;
}

int inspector_main(int argc, char **argv)
{
	struct iopts o = { 0 };
	struct hq_http *h = NULL;
	struct insp s;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t deadline;
	int lfd, fd = -1, rc = 0;
	bool asked = false, stdin_open = true;
	struct bft_buf line = { 0 };

	setvbuf(stderr, NULL, _IOLBF, 0);
	if (parse(&o, argc, argv)) {
		free(o.adds);
		return 2;	/* a usage error, as bfctl's */
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(&o);
	if (lfd < 0) {
		free(o.adds);
		return 1;
	}
	log_line("counters: listening on %s:%s", o.host, o.port);
	insp_init(&s, stdout, o.json, !o.json && isatty(1));
	if (open_record(&o, &s, &h)) {
		if (s.record)
			fclose(s.record);
		close(lfd);
		free(o.adds);
		return 1;
	}
	deadline = o.timeout_s ? (uint64_t)bft_mono_ms() + 1000 * o.timeout_s :
				 0;
	while (!got_signal) {
		struct pollfd p[3] = {
			{ .fd = fd >= 0 ? -1 : lfd, .events = POLLIN },
			{ .fd = fd, .events = POLLIN |
					       (s.out_buf.len ? POLLOUT : 0) },
			{ .fd = stdin_open && fd >= 0 ? 0 : -1,
			  .events = POLLIN },
		};

		if (deadline && (uint64_t)bft_mono_ms() >= deadline) {
			log_line("counters: --timeout reached");
			rc = 2;
			break;
		}
		if (poll(p, 3, 100) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0 && o.verbose)
				log_line("counters: an agent connected");
			asked = false;
		}
		if (p[2].revents) {
			char buf[512];
			ssize_t r = read(0, buf, sizeof(buf));

			if (r <= 0)
				stdin_open = false;
			else
				bft_buf_append(&line, buf, (size_t)r);
			for (char *nl; line.len &&
			     (nl = memchr(line.data, '\n', line.len));) {
				*nl = 0;
				if (line.data[0] &&
				    insp_command(&s, (char *)line.data))
					log_line("counters: not a command: %s "
						 "(list, add CATEGORY:NAME, "
						 "remove INDEX, bye)",
						 (char *)line.data);
				bft_buf_consume(&line, (size_t)(nl + 1 -
						(char *)line.data));
			}
		}
		if (fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			uint8_t buf[16384];
			ssize_t r = recv(fd, buf, sizeof(buf), 0);
			int e = r > 0 ? insp_feed(&s, buf, (size_t)r) : 0;

			if (r <= 0 || e) {
				log_line("counters: agent %s", r == 0 ?
					 "went away" : e ? s.err :
					 strerror(errno));
				close(fd);
				fd = -1;
				insp_reset(&s);
				continue;
			}
		}
		if (fd >= 0 && s.hello && !asked) {
			ask(&s, &o);
			asked = true;
		}
		if (fd >= 0 && !s.bye &&
		    ((o.samples && s.samples >= o.samples) ||
		     (o.list && !o.samples && s.lists)))
			insp_bye(&s);
		if (fd >= 0 && !flush_out(fd, &s)) {
			log_line("counters: agent: %s", strerror(errno));
			close(fd);
			fd = -1;
			insp_reset(&s);
			continue;
		}
		if (fd >= 0 && s.bye && !s.out_buf.len)
			break;
	}
	if (got_signal)
		log_line("counters: signal %d: finishing", (int)got_signal);
	if (fd >= 0 && !s.bye) {
		insp_bye(&s);
		flush_out(fd, &s);
	}
	if (fd >= 0)
		close(fd);
	close(lfd);
	if (h)
		hq_http_stop(h);
	if (s.record)
		fclose(s.record);
	insp_free(&s);
	bft_buf_free(&line);
	free(o.adds);
	return rc;
}
