// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector: drains bftrace's per-CPU rings (or replays recorded
 * streams) and speaks the Bytefrog protocol to an HQ, and/or writes the
 * flow agent's files.  See bfcollector.1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/bft_backend.h"
#include "bft_util.h"
#include "collector.h"

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

uint64_t coll_mono_ns(void)
{
	return bft_mono_ns();
}

uint64_t coll_now_ms(void)
{
	return bft_mono_ms();
}

void coll_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	bft_vlog("bfcollector", fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bfcollector [options]\n"
"\n"
"  -H, --hq HOST[:PORT]        HQ to send the trace to (port 7000)\n"
"  -P, --protocol 1|2          1: Bytefrog (default); 2: Code Pulse dialect\n"
"  -o, --output DIR            also write thread-<tid>.flow, ids.properties\n"
"                              and threads into DIR (alone: no HQ)\n"
"  -r, --replay DIR            read DIR/cpu<N>.bft instead of /dev/bftrace\n"
"      --methods FILE          method table (default: the kernel's, or\n"
"                              DIR/methods with --replay)\n"
"      --threads FILE          thread names for --replay (DIR/threads)\n"
"      --device PATH           the bftrace device (/dev/bftrace)\n"
"      --backend kmod|bpf|inline|auto the capture backend (auto, or\n"
"                              $BFT_BACKEND: the module if loaded, else a BPF\n"
"                              session; inline by name only)\n"
"      --replay-chunk BYTES    bytes read per CPU at a time (65536)\n"
"      --replay-delay MS       pause between replay reads (0)\n"
"      --connect-timeout SEC   give up reaching HQ after this long (never)\n"
"      --handshake-timeout MS  HQ must configure us within this (10000)\n"
"      --pause-lease BEATS     HQ's pause ends after this many heartbeat\n"
"                              intervals without a word from HQ (10; 0:\n"
"                              while its connection lasts)\n"
"      --until-exit            finish once every traced process is gone\n"
"      --background            return once recording (HQ said start; at\n"
"                              once without --hq), go on in the background\n"
"      --no-stop               HQ's stop ends tracing, not bfcollector\n"
"      --ms-only               send no bftrace.us markers (microseconds)\n"
"      --data-udp              send the data in UDP datagrams to HQ's host\n"
"                              and port (HQ needs --udp); control stays TCP\n"
"      --udp-rate BYTES        pace the datagrams to BYTES a second\n"
"                              (20000000; 0: unpaced)\n"
"      --counters HOST:PORT    serve counters to an inspector there\n"
"      --counters-interval MS  sample them every MS (1000)\n"
"      --user NAME             once set up, run as NAME with only the\n"
"                              capabilities HQ's commands need (root:\n"
"                              stay root, the default)\n"
"      --min-time DURATION     leave out calls shorter than DURATION\n"
"                              (500ns, 10us, 2ms, 1s; bare: us); their\n"
"                              callers stay\n"
"      --caller FUNC           only what runs under FUNC (a name or glob,\n"
"                              FUNC included; repeatable: under any)\n"
"  -v, --verbose\n"
"  -h, --help\n");
}

enum {
	OPT_METHODS = 256, OPT_THREADS, OPT_DEVICE, OPT_CHUNK, OPT_DELAY,
	OPT_CONNECT, OPT_HANDSHAKE, OPT_UNTIL_EXIT, OPT_NO_STOP, OPT_MS_ONLY, OPT_COUNTERS,
	OPT_COUNTERS_MS, OPT_BACKEND, OPT_PAUSE_LEASE, OPT_USER, OPT_BACKGROUND,
	OPT_MIN_TIME, OPT_CALLER, OPT_DATA_UDP, OPT_UDP_RATE,
};

static const struct option longopts[] = {
	{ "hq", required_argument, NULL, 'H' },
	{ "protocol", required_argument, NULL, 'P' },
	{ "output", required_argument, NULL, 'o' },
	{ "replay", required_argument, NULL, 'r' },
	{ "methods", required_argument, NULL, OPT_METHODS },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "replay-chunk", required_argument, NULL, OPT_CHUNK },
	{ "replay-delay", required_argument, NULL, OPT_DELAY },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT },
	{ "handshake-timeout", required_argument, NULL, OPT_HANDSHAKE },
	{ "pause-lease", required_argument, NULL, OPT_PAUSE_LEASE },
	{ "until-exit", no_argument, NULL, OPT_UNTIL_EXIT },
	{ "background", no_argument, NULL, OPT_BACKGROUND },
	{ "no-stop", no_argument, NULL, OPT_NO_STOP },
	{ "ms-only", no_argument, NULL, OPT_MS_ONLY },
	{ "data-udp", no_argument, NULL, OPT_DATA_UDP },
	{ "udp-rate", required_argument, NULL, OPT_UDP_RATE },
	{ "counters", required_argument, NULL, OPT_COUNTERS },
	{ "counters-interval", required_argument, NULL, OPT_COUNTERS_MS },
	{ "user", required_argument, NULL, OPT_USER },
	{ "min-time", required_argument, NULL, OPT_MIN_TIME },
	{ "caller", required_argument, NULL, OPT_CALLER },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int num(const char *s, const char *what, unsigned long lo,
	       unsigned long hi, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi || s[0] == '-') {
		fprintf(stderr, "bfcollector: bad %s: %s (%lu..%lu)\n", what, s,
			lo, hi);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

/* HOST:PORT, [V6]:PORT; the port may not be left out. */
static int host_port(const char *arg, const char *what, char *host,
		     size_t hlen, char *port, size_t plen)
{
	const char *colon = strrchr(arg, ':');
	unsigned int p;
	size_t hl;

	if (!colon || strchr(colon, ']') || colon == arg) {
		fprintf(stderr, "bfcollector: %s: HOST:PORT, not %s\n", what,
			arg);
		return -1;
	}
	hl = (size_t)(colon - arg);
	if (hl >= hlen || num(colon + 1, "port", 1, 65535, &p))
		return -1;
	memcpy(host, arg, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = 0;
	}
	snprintf(port, plen, "%u", p);
	return 0;
}

static int parse_args(struct coll_opts *o, int argc, char **argv)
{
	static char host[256], port[16], chost[256], cport[16];
	int ch;

	o->protocol = 1;
	o->counters_ms = 1000;
	o->replay_chunk = 65536;
	o->handshake_ms = 10000;
	o->pause_lease = 10;
	o->udp_rate = 20000000;
	while ((ch = getopt_long(argc, argv, "H:P:o:r:vh", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 'H': {
			const char *colon = strrchr(optarg, ':');
			size_t hl = colon && !strchr(colon, ']') ?
				    (size_t)(colon - optarg) : strlen(optarg);
			unsigned int p = 7000;

			if (hl >= sizeof(host) ||
			    (hl != strlen(optarg) &&
			     num(colon + 1, "port", 1, 65535, &p)))
				return -1;
			memcpy(host, optarg, hl);
			host[hl] = 0;
			if (host[0] == '[') {
				memmove(host, host + 1, strlen(host));
				host[strcspn(host, "]")] = 0;
			}
			snprintf(port, sizeof(port), "%u", p);
			o->hq_host = host;
			o->hq_port = port;
			break;
		}
		case 'P':
			if (num(optarg, "protocol", BFP_VERSION_MIN,
				BFP_VERSION_MAX, &o->protocol))
				return -1;
			break;
		case 'o':
			o->outdir = optarg;
			break;
		case 'r':
			o->replay_dir = optarg;
			break;
		case OPT_METHODS:
			o->methods_file = optarg;
			break;
		case OPT_THREADS:
			o->threads_file = optarg;
			break;
		case OPT_DEVICE:
			o->device = optarg;
			break;
		case OPT_BACKEND:
			o->backend = optarg;
			break;
		case OPT_CHUNK:
			if (num(optarg, "replay chunk", 1, 1u << 26,
				&o->replay_chunk))
				return -1;
			break;
		case OPT_DELAY:
			if (num(optarg, "replay delay", 0, 60000,
				&o->replay_delay_ms))
				return -1;
			break;
		case OPT_CONNECT:
			if (num(optarg, "connect timeout", 0, 86400 * 365,
				&o->connect_timeout_s))
				return -1;
			break;
		case OPT_HANDSHAKE:
			if (num(optarg, "handshake timeout", 1, 3600000,
				&o->handshake_ms))
				return -1;
			break;
		case OPT_PAUSE_LEASE:
			if (num(optarg, "pause lease", 0, 1000000,
				&o->pause_lease))
				return -1;
			break;
		case OPT_MIN_TIME:
			if (filters_opt_min_time(o, optarg))
				return -1;
			break;
		case OPT_CALLER:
			if (filters_opt_caller(o, optarg))
				return -1;
			break;
		case OPT_USER:
			o->user = optarg;
			break;
		case OPT_UNTIL_EXIT:
			o->until_exit = true;
			break;
		case OPT_BACKGROUND:
			o->background = true;
			break;
		case OPT_NO_STOP:
			o->no_stop = true;
			break;
		case OPT_MS_ONLY:
			o->ms_only = true;
			break;
		case OPT_DATA_UDP:
			o->data_udp = true;
			break;
		case OPT_UDP_RATE: {
			unsigned int rate;

			/* 4 GB/s: far past what one Ethernet link carries */
			if (num(optarg, "UDP rate (bytes a second)", 0,
				4000000000u, &rate))
				return -1;
			o->udp_rate = rate;
			break;
		}
		case OPT_COUNTERS:
			if (host_port(optarg, "--counters", chost,
				      sizeof(chost), cport, sizeof(cport)))
				return -1;
			o->counters_host = chost;
			o->counters_port = cport;
			break;
		case OPT_COUNTERS_MS:
			if (num(optarg, "counters interval", 10, 3600000,
				&o->counters_ms))
				return -1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bfcollector: unexpected argument %s\n",
			argv[optind]);
		return -1;
	}
	if (o->data_udp && !o->hq_host) {
		fprintf(stderr, "bfcollector: --data-udp sends to HQ: give "
			"--hq too\n");
		return -1;
	}
	if (!o->hq_host && !o->outdir && !o->counters_host) {
		fprintf(stderr, "bfcollector: nothing to do: give --hq, "
			"--output and/or --counters\n");
		return -1;
	}
	return 0;
}

/*
 * The capture backend, by bfctl's rule (bft_backend_choose): --backend,
 * else $BFT_BACKEND, else auto.  A name it does not know is a usage
 * error, even for --replay, which reads no backend; $BFT_BACKEND is
 * only looked at when one is read.
 */
static int choose_backend(const struct coll_opts *o,
			  const struct bft_backend_ops **be)
{
	char err[160];

	*be = NULL;
	if (o->replay_dir && !o->backend)
		return 0;
	if (bft_backend_choose(o->backend, be, err, sizeof(err))) {
		fprintf(stderr, "bfcollector: %s\n", err);
		return -1;
	}
	return 0;
}

static uint64_t lost_total(const struct coll *c)
{
	return c->lost_kernel + c->lost_gaps + c->lost_undelivered +
	       c->lost_unsent;
}

/* HQ unreachable: log, back off (100 ms doubling up to 5 s), maybe give up. */
static void connect_step(struct coll *c, uint64_t now)
{
	int err;

	if (c->hq != HQ_DOWN || now < c->next_connect_ms)
		return;
	err = hq_connect(c);
	if (!err) {
		pipeline_report_us(c);	/* declares them before any event */
		pipeline_report_lost(c);
		return;
	}
	if (c->stopping && c->hq == HQ_NONE)
		return;		/* refused, or malformed: fatal */
	if (err == -ENXIO) {
		coll_log("giving up: no such HQ host (check --hq)");
		c->hq = HQ_NONE;
		c->stopping = true;
		c->exit_code = EXIT_HQ;
		return;
	}
	c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : 100;
	if (c->backoff_ms > 5000)
		c->backoff_ms = 5000;
	c->next_connect_ms = coll_now_ms() + c->backoff_ms;
	coll_log("cannot reach HQ at %s:%s: %s; retrying in %u ms",
		 c->o.hq_host, c->o.hq_port, strerror(-err), c->backoff_ms);
	if (c->o.connect_timeout_s &&
	    now - c->down_since_ms >= 1000ull * c->o.connect_timeout_s) {
		coll_log("giving up on HQ after %u s", c->o.connect_timeout_s);
		c->hq = HQ_NONE;
		c->stopping = true;
		c->exit_code = EXIT_HQ;
	}
}

/* A fatal error of our own: HQ hears of it (error 99) before we go. */
static int die(struct coll *c, const char *what, int err)
{
	char text[256];

	snprintf(text, sizeof(text), "bfcollector: fatal: %s: %s", what,
		 strerror(err < 0 ? -err : err));
	if (c->hq == HQ_UP)
		hq_send_error_and_close(c, text);
	else
		coll_log("%s", text);
	return EXIT_FATAL;
}

/*
 * Without HQ, an inspector still connected when the input ends keeps us
 * until it says Good Bye or goes (a signal ends it too).
 */
static bool lingering(const struct coll *c)
{
	return counters_connected(c) && !got_signal;
}

#define TICK_SLACK_MS	100

static int loop(struct coll *c)
{
	uint64_t next_tick = 0;
	bool ended = false;
	int rc;

	while (!(c->exit_code && c->hq == HQ_NONE)) {
		struct pollfd p[COLL_MAX_SENDERS + 4 + COLL_SOURCE_FDS];
		int n, ns = 0, nc, timeout = -1;
		uint64_t now = coll_now_ms();
		uint64_t budget = (uint64_t)(c->config.buffer_budget > 4096 ?
					     c->config.buffer_budget : 4096);

		if (got_signal && !c->stopping) {
			coll_log("signal %d: finishing", (int)got_signal);
			c->stopping = true;
			source_drain(c);
		}
		hq_pause_guard(c);
		connect_step(c, now);
		if (c->exit_code && c->hq == HQ_NONE)
			break;
		/* HQ lost while recording: suspend, as the protocol does */
		if (c->suspended_for_hq && c->hq == HQ_DOWN &&
		    source_mode(c) == BFT_MODE_TRACING)
			source_mode_cmd(c, BFT_CMD_SUSPEND);
		if (ended && (c->hq != HQ_DOWN || !c->ever_up ||
			      now - c->down_since_ms > 10000) &&
		    (c->hq != HQ_NONE || !lingering(c)))
			break;
		n = hq_pollfds(c, p, COLL_MAX_SENDERS + 1);
		if (c->hq == HQ_DOWN)
			timeout = (int)(c->next_connect_ms > now ?
					c->next_connect_ms - now : 0);
		if (!ended && hq_pending(c) < budget)
			ns = source_pollfds(c->src, p + n, COLL_SOURCE_FDS,
					    &timeout);
		/*
		 * Data, HQ and the inspector wake us through their fds; the
		 * loop's own timers are the tick (a late one changes nothing:
		 * it waits for a wake that comes anyway, up to TICK_SLACK_MS)
		 * and HQ's heartbeat (on time).  An idle collector sleeps.
		 */
		coll_wait_until(next_tick + TICK_SLACK_MS, &timeout);
		if (c->hq == HQ_UP)
			coll_wait_until(c->next_heartbeat_ms, &timeout);
		if (c->hq == HQ_UP && c->udp_next_ms)
			coll_wait_until(c->udp_next_ms, &timeout);
		if (hq_pause_deadline(c))
			coll_wait_until(hq_pause_deadline(c), &timeout);
		nc = counters_pollfds(c, p + n + ns, 1, &timeout);
		if (poll(p, (nfds_t)(n + ns + nc), timeout) < 0 &&
		    errno != EINTR)
			return die(c, "poll", errno);
		hq_io(c, p, n);
		source_woke(c->src, p + n, ns);
		counters_io(c, p + n + ns, nc);
		if (c->exit_code && c->hq == HQ_NONE)
			break;
		/* Back-pressure: HQ slower than the input leaves data in the
		 * rings (the kernel counts what it then drops). */
		if (!ended && (hq_pending(c) < budget || c->hq != HQ_UP)) {
			rc = source_read(c);
			if (rc < 0)
				return die(c, "reading the records", rc);
			if (rc == 1) {
				pipeline_drain(c);
				ended = true;
				c->input_ended = true;
				c->stopping = true;
			}
		}
		rc = pipeline_run(c);
		if (rc == -ENOMEM)
			return die(c, "merging the CPU streams", rc);
		if (rc && rc != -EPROTO)
			coll_log("merge: %s", strerror(-rc));
		pipeline_report_us(c);
		hq_flush(c);
		now = coll_now_ms();
		if (now >= next_tick) {
			next_tick = now + (c->hq == HQ_UP ?
					   (uint64_t)c->config.heartbeat_ms : 1000);
			source_tick(c);
			if (source_is_kernel(c->src))
				pipeline_check_renames(c);
			if (c->o.until_exit && source_targets_gone(c) &&
			    !c->stopping) {
				coll_log("every traced process is gone: "
					 "finishing");
				c->stopping = true;
				source_drain(c);
			}
		}
		pipeline_report_lost(c);
		hq_heartbeat(c, false);
		if (ended && c->hq == HQ_NONE && !lingering(c))
			break;
		if (ended && c->hq == HQ_UP)
			break;
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct coll c = { .ctl_fd = -1, .ready_fd = -1, .udp_fd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	const struct bft_backend_ops *be;
	char err[512] = "";
	int rc;

	setvbuf(stderr, NULL, _IOLBF, 0);
	if (parse_args(&c.o, argc, argv) || choose_backend(&c.o, &be))
		return EXIT_USAGE;
	if (c.o.background && coll_background(&c))
		return EXIT_FATAL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	bfp_config_init(&c.config);
	if (exc_types_init(&c.exc)) {
		rc = EXIT_FATAL;
		goto out;
	}
	rc = c.o.replay_dir ? source_open_replay(&c, err, sizeof(err)) :
			      source_open_live(&c, be, err, sizeof(err));
	if (rc) {
		coll_log("%s", err[0] ? err : strerror(-rc));
		rc = EXIT_FATAL;
		goto out;
	}
	if (pipeline_init(&c, source_ncpus(c.src))) {
		rc = EXIT_FATAL;
		goto out;
	}
	if (counters_init(&c)) {
		rc = EXIT_FATAL;
		goto out_pipeline;
	}
	rc = coll_drop_privileges(&c, err, sizeof(err));
	if (rc) {
		coll_log("%s", err);
		rc = rc == -EINVAL ? EXIT_USAGE : EXIT_FATAL;
		goto out_pipeline;
	}
	if (c.o.hq_host) {
		c.hq = HQ_DOWN;
		c.down_since_ms = coll_now_ms();
	} else {
		/* no HQ to say start: recording starts now */
		c.hq = HQ_NONE;
		c.started = true;
		if (source_mode(&c) == BFT_MODE_INITIALIZING ||
		    source_mode(&c) == BFT_MODE_SHUTTING_DOWN)
			source_mode_cmd(&c, BFT_CMD_START);
		coll_ready(&c);
	}
	rc = loop(&c);
	if (filters_finish(&c) && !rc)
		rc = EXIT_FATAL;
	hq_pause_release(&c, "bfcollector is leaving");
	counters_shutdown(&c);
	if (c.o.verbose) {
		const struct bft_merge_stats *ms = bft_merge_stats(&c.merge);

		source_log_costs(&c);
		coll_log("merge: %" PRIu64 " records, %" PRIu64 " of them "
			 "straight from the reads, at most %" PRIu64 " queued",
			 ms->emitted, ms->direct, ms->max_queued);
	}
	filters_report(&c);
	if (c.hq == HQ_UP) {
		pipeline_report_lost(&c);
		pipeline_report_us(&c);
		hq_shutdown(&c);
	}
	if (flow_files_finish(&c) && !rc)
		rc = EXIT_FATAL;
	if (!rc)
		rc = c.exit_code;
	coll_log("%" PRIu64 " events sent, %" PRIu64 " excluded, %" PRIu64
		 " lost (ring full %" PRIu64 ", stream gaps %" PRIu64
		 ", undelivered %" PRIu64 ", HQ away %" PRIu64 "), %" PRIu64
		 " dropped while suspended, %" PRIu64 " data breaks; %" PRIu64
		 " exceptions (%" PRIu64 " thrown outside traced frames), %"
		 PRIu64 " frames left by them; %" PRIu64 " USDT marks",
		 c.events_sent, c.excluded, lost_total(&c), c.lost_kernel,
		 c.lost_gaps, c.lost_undelivered, c.lost_unsent,
		 c.suspended_dropped, c.breaks_sent, c.throws,
		 c.throws_outside, c.bubbles, c.marks_sent);
out_pipeline:
	counters_free(&c);
	pipeline_free(&c);
out:
	source_close(c.src);
	methods_free(&c.methods);
	exc_types_free(&c.exc);
	bfp_config_free(&c.config);
	bft_buf_free(&c.ctl_in);
	bft_buf_free(&c.ctl_out);
	return rc;
}
