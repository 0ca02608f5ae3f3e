// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --counters, the program (inspector.h): its options, the socket an
 * agent connects to, --output's record and --http's server, and the loop
 * that feeds what the agent sends to inspector.c and sends what it asks.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bft_util.h"
#include "http.h"
#include "inspector.h"

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
