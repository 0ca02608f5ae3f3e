// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl status [--watch]: mode, probes, targets, per-CPU ring counters,
 * and the followers of later loads with their pending patterns.
 */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "bfctl.h"
#include "follow.h"
#include "output.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void print_stats(const char *key, const struct bft_nl_cpu_stats *s,
			const char *label)
{
	out_obj_open(key);
	if (label)
		out_text("%-5s", label);
	else
		out_u64("cpu", "%-5llu", s->cpu);
	out_u64("produced", " %12llu", s->produced);
	out_u64("written", " %12llu", s->written);
	out_u64("lost", " %10llu", s->lost);
	out_u64("suspended", " %10llu", s->suspended);
	out_u64("bytes_written", " %14llu", s->bytes_written);
	out_u64("bytes_read", " %14llu", s->bytes_read);
	out_u64("used", " %10llu", s->used);
	out_u64("size", "/%-10llu\n", s->size);
	out_obj_close();
}

static void print_status(const struct ctl *c, const struct bft_nl_status *st)
{
	struct bft_nl_cpu_stats total = { 0 };
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	out_begin();
	out_u64("time", NULL, (uint64_t)now.tv_sec);
	out_str("backend", "backend  %s\n", ctl_backend_name(c));
	out_str("mode", "mode     %s\n", bft_mode_name(st->mode));
	out_u64("nr_probes", "probes   %llu\n", st->nr_probes);
	out_u64("nr_targets", "targets  %llu\n", st->nr_targets);
	/* a module older than BFT_S_READER does not say */
	if (ctl_readers(st) >= 0) {
		int n = ctl_readers(st);

		out_u64("rings_read", NULL, (uint64_t)n);
		out_text("reader   %s\n", n == (int)st->nr_cpus ? "yes" :
			 !n ? "none: the rings fill, then lose events" : "on some rings only");
	}
	out_text("%-5s %12s %12s %10s %10s %14s %14s %21s\n", "cpu", "produced",
		 "written", "lost", "suspended", "bytes_written", "bytes_read",
		 "used/size");
	out_arr_open("cpus");
	for (uint32_t i = 0; i < st->nr_cpus; i++) {
		const struct bft_nl_cpu_stats *s = &st->cpus[i];

		print_stats(NULL, s, NULL);
		total.produced += s->produced;
		total.written += s->written;
		total.lost += s->lost;
		total.suspended += s->suspended;
		total.bytes_written += s->bytes_written;
		total.bytes_read += s->bytes_read;
		total.used += s->used;
		total.size += s->size;
	}
	out_arr_close();
	print_stats("total", &total, "all");
	follow_print(c);
	out_end();
}

int cmd_status(struct ctl *c, int argc, char **argv)
{
	bool watch = false;
	uint64_t interval = 1, count = 0;
	const struct arg_def defs[] = {
		{ .name = "watch", .short_name = 'w', .kind = ARG_FLAG, .dest = &watch,
		  .help = "refresh until interrupted (JSON: one line each time)" },
		{ .name = "interval", .short_name = 'i', .kind = ARG_UINT,
		  .dest = &interval, .meta = "SEC", .min = 1, .max = 3600,
		  .help = "seconds between refreshes (1)" },
		{ .name = "count", .short_name = 'n', .kind = ARG_UINT, .dest = &count,
		  .meta = "N", .help = "with --watch: stop after N refreshes" },
		ARG_END
	};
	bool clear = false;
	int rc;

	rc = cmd_args(c, current_cmd, defs, argc, argv, ARGS_INTERLEAVED, NULL, NULL);
	if (rc >= 0)
		return rc;
	rc = ctl_connect(c, 0);
	if (rc)
		return rc;
	if (watch) {
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		clear = !c->json && isatty(STDOUT_FILENO);
	}
	for (uint64_t n = 0; !interrupted; n++) {
		struct bft_nl_status st;

		rc = ctl_get_status(c, &st);
		if (rc) {
			rc = ctl_nl_fail(c, "status", rc);
			break;
		}
		if (clear)
			fputs("\033[H\033[2J", stdout);
		else if (n && !c->json)
			putchar('\n');
		print_status(c, &st);
		bft_nl_status_free(&st);
		if (!watch || (count && n + 1 >= count))
			break;
		sleep((unsigned int)interval);
	}
	ctl_close(c);
	return rc;
}
