// SPDX-License-Identifier: GPL-2.0
/*
 * bench-ringsize: read every ring of /dev/bftrace until SIGINT/SIGTERM,
 * decode each CPU stream as it comes, and say where the bytes went: how
 * many records of each kind, and how many bytes they took.  scripts/bench
 * runs it instead of bfcollector for the size measurement, because the
 * collector does not keep the raw streams.  With --save DIR the raw
 * streams are also written to DIR/cpu<N>.bft (bfcollector --replay reads
 * that layout).
 *
 * Output: "kind=NAME records=N bytes=B" lines, then
 * "total bytes=B events=E enters=N exits=N lost=L errors=X".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/bft_rings.h"
#include "wire/bft_stream.h"

#define MAX_CPUS 1024

struct cpu_state {
	struct bft_stream dec;
	int save_fd;
	/* the record before the current one: its size is known at the next */
	uint16_t prev_kind;
	uint64_t prev_offset;
};

static struct cpu_state cpus[MAX_CPUS];
static uint64_t kind_records[BFT_REC__COUNT];
static uint64_t kind_bytes[BFT_REC__COUNT];
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void account(struct cpu_state *c, uint64_t end)
{
	if (c->prev_kind == BFT_REC_NONE)
		return;
	kind_records[c->prev_kind]++;
	kind_bytes[c->prev_kind] += end - c->prev_offset;
}

static int on_record(void *ctx, const struct bft_record *r)
{
	struct cpu_state *c = ctx;

	/* a GAP is synthetic: it has no bytes of its own */
	if (r->kind == BFT_REC_GAP)
		return 0;
	account(c, r->offset);
	c->prev_kind = r->kind;
	c->prev_offset = r->offset;
	return 0;
}

static int on_chunk(unsigned int cpu, const void *data, size_t len, void *arg)
{
	struct cpu_state *c = &cpus[cpu];
	const char *p = data;
	size_t done = 0;

	(void)arg;
	while (c->save_fd >= 0 && done < len) {
		ssize_t n = write(c->save_fd, p + done, len - done);

		if (n < 0) {
			fprintf(stderr, "bench-ringsize: write cpu%u.bft: %s\n",
				cpu, strerror(errno));
			return -EIO;
		}
		done += (size_t)n;
	}
	/* a decoding error is counted in the stats and reported at the end */
	bft_stream_feed(&c->dec, data, len);
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const char *save = NULL;
	struct bft_rings *rings;
	uint64_t total = 0, events = 0, enters = 0, exits = 0, lost = 0;
	uint64_t errors = 0;
	unsigned int n, i;
	char err[512];
	int k;

	if (argc == 3 && !strcmp(argv[1], "--save")) {
		save = argv[2];
	} else if (argc != 1) {
		fprintf(stderr, "usage: bench-ringsize [--save DIR]\n");
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (bft_rings_open(&rings, NULL, 0, err, sizeof(err))) {
		fprintf(stderr, "bench-ringsize: %s\n", err);
		return 1;
	}
	n = bft_rings_nr_cpus(rings);
	if (n > MAX_CPUS)
		n = MAX_CPUS;
	for (i = 0; i < n; i++) {
		struct bft_stream_opts o = {
			.cpu = i, .on_record = on_record, .ctx = &cpus[i],
			.policy = BFT_STREAM_RESYNC,
		};

		bft_stream_init(&cpus[i].dec, &o);
		cpus[i].save_fd = -1;
		if (save && bft_rings_bound(rings, i)) {
			char path[4200];

			snprintf(path, sizeof(path), "%s/cpu%u.bft", save, i);
			cpus[i].save_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC |
					       O_CLOEXEC, 0644);
			if (cpus[i].save_fd < 0) {
				fprintf(stderr, "bench-ringsize: %s: %s\n", path,
					strerror(errno));
				return 1;
			}
		}
	}
	/* ready: the driver waits for this line before it starts the target */
	printf("ready cpus=%u\n", n);
	fflush(stdout);
	while (!stop) {
		ssize_t r = bft_rings_poll(rings, 100, on_chunk, NULL);

		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "bench-ringsize: %s\n",
				bft_rings_errmsg(rings));
			return 1;
		}
	}
	/* what the flush timer has yet to seal: quiet for 2.5 flush periods */
	if (bft_rings_drain(rings, 250, 5000, on_chunk, NULL) < 0)
		fprintf(stderr, "bench-ringsize: drain: %s\n",
			bft_rings_errmsg(rings));
	for (i = 0; i < n; i++) {
		const struct bft_stream_stats *st = bft_stream_stats(&cpus[i].dec);

		account(&cpus[i], st->bytes);
		total += st->bytes;
		events += st->events;
		enters += st->enters + st->noret_enters;
		exits += st->exits;
		lost += st->lost;
		errors += st->errors;
		if (cpus[i].save_fd >= 0)
			close(cpus[i].save_fd);
	}
	for (k = 1; k < BFT_REC__COUNT; k++)
		if (kind_records[k])
			printf("kind=%s records=%" PRIu64 " bytes=%" PRIu64 "\n",
			       bft_rec_kind_name((unsigned int)k),
			       kind_records[k], kind_bytes[k]);
	printf("total bytes=%" PRIu64 " events=%" PRIu64 " enters=%" PRIu64
	       " exits=%" PRIu64 " lost=%" PRIu64 " errors=%" PRIu64 "\n",
	       total, events, enters, exits, lost, errors);
	bft_rings_close(rings);
	return errors ? 1 : 0;
}
