// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq: a reference HQ for Bytefrog agents (bfcollector, or a JVM agent).
 * See bfhq.1.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bft_util.h"
#include "hq.h"
#include "http.h"
#include "inspector.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bfhq [options]                 serve Bytefrog agents\n"
"       bfhq --control PATH --send CMD  drive a running bfhq\n"
"       bfhq --counters [HOST:]PORT ... inspect a counters agent (--counters\n"
"                                       --help)\n"
"       bfhq --replay DIR [-o OUT]      the usual outputs from trace-N/live/ (DIR:\n"
"                                       trace-N or its live/; OUT: trace-N/replay)\n"
"       bfhq --flame FOLDED [-o SVG]    draw folded stacks (a trace's folded.txt)\n"
"                                       as a flame graph (SVG: flame.svg)\n"
"\n"
"  -l, --listen HOST[:PORT]   address to listen on (default 127.0.0.1:%u)\n"
"  -p, --port PORT            port to listen on\n"
"  -o, --output DIR           where each trace's files go (default bfhq-out)\n"
"  -c, --control PATH         local control socket (start, stop, pause, ...)\n"
"      --send CMD             send CMD [RUN] to the bfhq at --control, exit\n"
"      --start                start agents as soon as they are configured\n"
"      --suspended            with --start: start them suspended\n"
"      --heartbeat MS         heartbeat interval agents are told (1000)\n"
"      --data-senders N       data connections per agent (1)\n"
"      --include REGEX        trace what matches (repeatable)\n"
"      --exclude REGEX        do not trace what matches (repeatable)\n"
"      --buffer-budget BYTES  agent send buffer budget (25600)\n"
"      --queue-retry N        agent queue retry count (5)\n"
"      --java-class NAME      version 1 configuration class: bytefrog\n"
"                             (com.secdec...) or codepulse (com.codedx...)\n"
"      --gap-timeout MS       wait for a missing sequence this long (2000)\n"
"      --reorder-bound N      declare a missing sequence lost once N messages\n"
"                             wait behind it (default: no bound but 2^20)\n"
"      --live-flush MS        write trace-N/live/ every MS ms (100; 0: not)\n"
"      --live-stamps          also trace-N/live/stamps: when each event was\n"
"                             routed and indexed (a latency debug aid)\n"
"      --full-names           print C++ signatures whole in tree.txt,\n"
"                             summary.txt, folded.txt and flame.svg (default:\n"
"                             Foo::bar, no parameters, std:: defaults left\n"
"                             out; also with --replay)\n"
"      --count N              exit once N traces have ended\n"
"      --timeout SECONDS      exit (status 3) after this long, whatever happens\n"
"      --http [HOST:]PORT     serve the live viewer there (HOST default\n"
"                             127.0.0.1; PORT 0: any free port, logged)\n"
"      --http-host NAME       also serve requests whose Host is NAME (besides\n"
"                             HOST, localhost, 127.0.0.1, [::1]; repeatable)\n"
"      --http-any-host        serve requests whatever their Host header\n"
"      --data-from any|ADDR   take data connections (and datagrams) from ADDR\n"
"                             too (repeatable), or from anywhere (default: only\n"
"                             from the address of the run's control connection)\n"
"      --udp                  also take data datagrams (bfcollector --data-udp)\n"
"                             on the same port number; their traces' reorder\n"
"                             bound is %u unless --reorder-bound says\n"
"  -v, --verbose              more log lines (twice: every heartbeat)\n"
"  -h, --help\n", HQ_DEFAULT_PORT, HQ_UDP_REORDER_BOUND);
}

static int parse_uint(const char *s, const char *what, unsigned long max,
		      unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *v > max || s[0] == '-') {
		fprintf(stderr, "bfhq: bad %s: %s\n", what, s);
		return -1;
	}
	return 0;
}

enum {
	OPT_SEND = 256, OPT_START, OPT_SUSPENDED, OPT_HEARTBEAT, OPT_SENDERS,
	OPT_INCLUDE, OPT_EXCLUDE, OPT_BUDGET, OPT_RETRY, OPT_CLASS, OPT_GAP,
	OPT_COUNT, OPT_TIMEOUT, OPT_BOUND, OPT_LIVE, OPT_REPLAY, OPT_FLAME, OPT_HTTP,
	OPT_STAMPS, OPT_HTTP_HOST, OPT_HTTP_ANY, OPT_DATA_FROM, OPT_UDP,
	OPT_FULL_NAMES,
};

static const struct option longopts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "port", required_argument, NULL, 'p' },
	{ "output", required_argument, NULL, 'o' },
	{ "control", required_argument, NULL, 'c' },
	{ "send", required_argument, NULL, OPT_SEND },
	{ "start", no_argument, NULL, OPT_START },
	{ "suspended", no_argument, NULL, OPT_SUSPENDED },
	{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
	{ "data-senders", required_argument, NULL, OPT_SENDERS },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "buffer-budget", required_argument, NULL, OPT_BUDGET },
	{ "queue-retry", required_argument, NULL, OPT_RETRY },
	{ "java-class", required_argument, NULL, OPT_CLASS },
	{ "gap-timeout", required_argument, NULL, OPT_GAP },
	{ "reorder-bound", required_argument, NULL, OPT_BOUND },
	{ "live-flush", required_argument, NULL, OPT_LIVE },
	{ "live-stamps", no_argument, NULL, OPT_STAMPS },
	{ "full-names", no_argument, NULL, OPT_FULL_NAMES },
	{ "replay", required_argument, NULL, OPT_REPLAY },
	{ "flame", required_argument, NULL, OPT_FLAME },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-host", required_argument, NULL, OPT_HTTP_HOST },
	{ "http-any-host", no_argument, NULL, OPT_HTTP_ANY },
	{ "data-from", required_argument, NULL, OPT_DATA_FROM },
	{ "udp", no_argument, NULL, OPT_UDP },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * HOST:PORT, [V6]:PORT or PORT into host (unchanged if none given) and
 * port.
 */
static int parse_hostport(const char *s, char *host, size_t n,
			  unsigned int *port, bool need_port)
{
	const char *colon = strrchr(s, ':');
	unsigned long v;

	if (need_port && !colon) {
		if (parse_uint(s, "port", 65535, &v))
			return -1;
		*port = (unsigned int)v;
		return 0;
	}
	snprintf(host, n, "%s", s);
	if (colon && !strchr(colon, ']')) {
		host[colon - s] = 0;
		if (parse_uint(colon + 1, "port", 65535, &v))
			return -1;
		*port = (unsigned int)v;
	} else if (need_port) {
		fprintf(stderr, "bfhq: no port in %s\n", s);
		return -1;
	}
	if (host[0] == '[') {	/* [::1] */
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = 0;
	}
	return 0;
}

static int parse_args(struct hq_opts *o, int argc, char **argv,
		      const char **send, const char **replay, const char **flame)
{
	static char host[256], http_host[256] = "127.0.0.1";
	bool bound_given = false;
	unsigned long v;
	int c;

	o->listen_host = "127.0.0.1";
	o->port = HQ_DEFAULT_PORT;
	o->outdir = NULL;	/* bfhq-out, but for --replay */
	o->gap_ms = 2000;
	o->live_flush_ms = 100;
	bfp_config_init(&o->config);
	while ((c = getopt_long(argc, argv, "l:p:o:c:vh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'l':
			if (parse_hostport(optarg, host, sizeof(host),
					   &o->port, false))
				return -1;
			o->listen_host = host;
			break;
		case OPT_HTTP:
			if (parse_hostport(optarg, http_host,
					   sizeof(http_host), &o->http_port,
					   true))
				return -1;
			o->http_host = http_host;
			break;
		case OPT_HTTP_HOST:
			if (o->nhttp_names == 8 || !*optarg ||
			    strlen(optarg) > 253) {
				fprintf(stderr, "bfhq: --http-host: at most 8 "
					"names of 1 to 253 bytes\n");
				return -1;
			}
			o->http_names[o->nhttp_names++] = optarg;
			break;
		case OPT_HTTP_ANY:
			o->http_any_host = true;
			break;
		case OPT_DATA_FROM:
			if (!strcmp(optarg, "any")) {
				o->data_from_any = true;
				break;
			}
			if (o->ndata_from == 8) {
				fprintf(stderr, "bfhq: --data-from: at most 8 "
					"addresses\n");
				return -1;
			}
			if (hq_addr_canon(optarg,
					  o->data_from[o->ndata_from])) {
				fprintf(stderr, "bfhq: --data-from: not a "
					"numeric address (or any): %s\n",
					optarg);
				return -1;
			}
			o->ndata_from++;
			break;
		case 'p':
			if (parse_uint(optarg, "port", 65535, &v))
				return -1;
			o->port = (unsigned int)v;
			break;
		case 'o':
			o->outdir = optarg;
			break;
		case 'c':
			o->control_path = optarg;
			break;
		case OPT_SEND:
			*send = optarg;
			break;
		case OPT_START:
			o->start = true;
			break;
		case OPT_SUSPENDED:
			o->start_suspended = true;
			break;
		case OPT_HEARTBEAT:
			if (parse_uint(optarg, "heartbeat", INT32_MAX, &v) || !v)
				return -1;
			o->config.heartbeat_ms = (int32_t)v;
			break;
		case OPT_SENDERS:
			if (parse_uint(optarg, "data senders", 64, &v) || !v)
				return -1;
			o->config.data_senders = (int32_t)v;
			break;
		case OPT_INCLUDE:
		case OPT_EXCLUDE:
			if (bfp_strlist_add(c == OPT_INCLUDE ?
					    &o->config.inclusions :
					    &o->config.exclusions, optarg))
				return -1;
			break;
		case OPT_BUDGET:
			if (parse_uint(optarg, "buffer budget", INT32_MAX, &v))
				return -1;
			o->config.buffer_budget = (int32_t)v;
			break;
		case OPT_RETRY:
			if (parse_uint(optarg, "queue retry", INT32_MAX, &v))
				return -1;
			o->config.queue_retry = (int32_t)v;
			break;
		case OPT_CLASS:
			if (!strcmp(optarg, "bytefrog"))
				o->config.java_class = BFP_CLASS_BYTEFROG;
			else if (!strcmp(optarg, "codepulse"))
				o->config.java_class = BFP_CLASS_CODEPULSE;
			else {
				fprintf(stderr, "bfhq: --java-class: bytefrog "
					"or codepulse\n");
				return -1;
			}
			break;
		case OPT_GAP:
			if (parse_uint(optarg, "gap timeout", 3600000, &v))
				return -1;
			o->gap_ms = (unsigned int)v;
			break;
		case OPT_BOUND:
			if (parse_uint(optarg, "reorder bound", HQ_MAX_PENDING,
				       &v))
				return -1;
			o->reorder_bound = (unsigned int)v;
			bound_given = true;
			break;
		case OPT_UDP:
			o->udp = true;
			break;
		case OPT_LIVE:
			if (parse_uint(optarg, "live flush", 3600000, &v))
				return -1;
			o->live_flush_ms = (unsigned int)v;
			break;
		case OPT_STAMPS:
			o->live_stamps = true;
			break;
		case OPT_REPLAY:
			*replay = optarg;
			break;
		case OPT_FLAME:
			*flame = optarg;
			break;
		case OPT_FULL_NAMES:
			route_full_names = true;
			break;
		case OPT_COUNT:
			if (parse_uint(optarg, "count", 1000000, &v))
				return -1;
			o->count = (unsigned int)v;
			break;
		case OPT_TIMEOUT:
			if (parse_uint(optarg, "timeout", 86400 * 365, &v))
				return -1;
			o->timeout_s = (unsigned int)v;
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
	o->udp_reorder_bound = bound_given ? o->reorder_bound :
					     HQ_UDP_REORDER_BOUND;
	if (optind < argc) {
		fprintf(stderr, "bfhq: unexpected argument %s\n", argv[optind]);
		return -1;
	}
	if (*send && !o->control_path) {
		fprintf(stderr, "bfhq: --send needs --control PATH\n");
		return -1;
	}
	return 0;
}

static int run(struct hq *hq)
{
	uint64_t deadline = hq->o.timeout_s ?
			    hq_now_ms() + 1000ull * hq->o.timeout_s : 0;
	struct pollfd *pfd = NULL;
	unsigned int cap = 0, i;
	int rc = 0;

	while (!hq->stop) {
		unsigned int n = 0, base;
		/* a live flush is never a poll late */
		int poll_ms = 100;
		uint64_t now = hq_now_ms();

		if (cap < hq->nconns + 3) {
			struct pollfd *p;

			cap = 2 * (hq->nconns + 3);
			p = realloc(pfd, cap * sizeof(*p));
			if (!p) {
				rc = 1;
				break;
			}
			pfd = p;
		}
		pfd[n++] = (struct pollfd){ .fd = hq->listen_fd,
					    .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = hq->ctl_fd,
					    .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = hq->udp_fd,
					    .events = POLLIN };
		base = n;
		for (i = 0; i < hq->ntraces; i++) {
			int w = live_wait_ms(hq->traces[i]->live, now);

			if (w >= 0 && w < poll_ms)
				poll_ms = w;
		}
		for (i = 0; i < hq->nconns; i++) {
			struct conn *c = hq->conns[i];

			pfd[n++] = (struct pollfd){
				.fd = c->fd,
				.events = POLLIN | (c->out.len ? POLLOUT : 0),
			};
		}
		if (poll(pfd, n, poll_ms) < 0 && errno != EINTR) {
			hq_log("poll: %s", strerror(errno));
			rc = 1;
			break;
		}
		if (got_signal) {
			hq_log("signal %d: finishing", (int)got_signal);
			break;
		}
		for (i = 0; i < hq->nconns && base + i < n; i++) {
			struct conn *c = hq->conns[i];
			short re = pfd[base + i].revents;

			if (c->dead)
				continue;
			if (re & POLLOUT)
				hq_conn_write(c);
			if (re & (POLLIN | POLLHUP | POLLERR))
				hq_conn_read(hq, c);
		}
		/* after TCP: a DataEnd read here is applied first */
		if (hq->udp_fd >= 0 && (pfd[2].revents & POLLIN))
			hq_udp_read(hq);
		if (pfd[0].revents & POLLIN)
			hq_accept(hq);
		if (hq->ctl_fd >= 0 && (pfd[1].revents & POLLIN))
			hq_ctl_accept(hq);
		now = hq_now_ms();
		hq_greet_timeouts(hq, now);
		hq_reap(hq);
		for (i = 0; i < hq->ntraces; i++)
			hq_trace_tick(hq, hq->traces[i], now);
		hq_reap(hq);
		if (hq->o.count && hq->finished >= hq->o.count)
			break;
		if (deadline && now >= deadline) {
			hq_log("--timeout reached");
			rc = 3;
			break;
		}
	}
	free(pfd);
	return rc;
}

int main(int argc, char **argv)
{
	struct hq hq = { .listen_fd = -1, .ctl_fd = -1, .udp_fd = -1 };
	struct hq_http *http = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	const char *send = NULL, *replay = NULL, *flame = NULL;
	int rc;

	setvbuf(stderr, NULL, _IOLBF, 0);
	/* the counters inspector is a mode of its own, with its options */
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--counters", 10))
			return inspector_main(argc, argv);
	if (parse_args(&hq.o, argc, argv, &send, &replay, &flame)) {
		bfp_config_free(&hq.o.config);
		return 2;	/* a usage error, as bfctl's */
	}
	if (replay) {
		bfp_config_free(&hq.o.config);
		return hq_replay(replay, hq.o.outdir);
	}
	if (flame) {
		const char *svg = hq.o.outdir ? hq.o.outdir : "flame.svg";
		const char *base = strrchr(flame, '/');

		bfp_config_free(&hq.o.config);
		rc = hq_write_flame(flame, svg, base ? base + 1 : flame, NULL,
				    NULL);
		if (rc)
			hq_log("cannot draw %s into %s: %s", flame, svg,
			       strerror(-rc));
		return rc ? 1 : 0;
	}
	if (!hq.o.outdir)
		hq.o.outdir = "bfhq-out";
	if (send) {
		bfp_config_free(&hq.o.config);
		return hq_ctl_send(hq.o.control_path, send);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (hq_listen(&hq) || (hq.o.udp && hq_udp_open(&hq)) ||
	    (hq.o.control_path && hq_ctl_listen(&hq))) {
		if (hq.udp_fd >= 0)
			close(hq.udp_fd);
		bfp_config_free(&hq.o.config);
		if (hq.listen_fd >= 0)
			close(hq.listen_fd);
		return 1;
	}
	hq_log("listening on %s:%u%s, traces go to %s/", hq.o.listen_host,
	       hq.o.port, hq.o.udp ? " (TCP and UDP)" : "", hq.o.outdir);
	if (hq.o.http_host) {
		struct hq_http_names names = {
			.names = hq.o.http_names, .n = hq.o.nhttp_names,
			.any_host = hq.o.http_any_host,
		};

		http = hq_http_start(hq.o.http_host, hq.o.http_port,
				     hq.o.outdir, &names);
		if (!http) {
			hq_free(&hq);
			close(hq.listen_fd);
			if (hq.ctl_fd >= 0) {
				close(hq.ctl_fd);
				unlink(hq.o.control_path);
			}
			bfp_config_free(&hq.o.config);
			return 1;
		}
	}
	rc = run(&hq);
	/* Write out what every trace still running has. */
	hq_free(&hq);
	hq_http_stop(http);
	close(hq.listen_fd);
	if (hq.udp_fd >= 0)
		close(hq.udp_fd);
	if (hq.ctl_fd >= 0) {
		close(hq.ctl_fd);
		unlink(hq.o.control_path);
	}
	bfp_config_free(&hq.o.config);
	return rc;
}
