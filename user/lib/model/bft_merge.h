/* SPDX-License-Identifier: GPL-2.0 */
/*
 * K-way merge of per-CPU record streams by stream time.
 *
 * Records are merged in the total order (time_ns, cpu, position in the CPU
 * stream).  Since a thread's events, merged this way, come in the order the
 * thread made them (bftrace.h, BFT_ESC_THREAD), the output can be fed to
 * per-thread reconstruction (bft_calltree).
 *
 * Streaming, as LTTng live does it: a record (t, c) is emitted only once no
 * CPU can still deliver a record that sorts before it.  A CPU whose queue is
 * empty blocks the merge until it has delivered a record with a later time
 * (its watermark; the kernel's periodic SYNC heartbeat is such a record even
 * on an idle CPU), is declared idle up to a time (bft_merge_advance), or is
 * closed (bft_merge_close).  bft_merge_drain() ends the input: everything
 * queued is emitted, whatever the watermarks.  Merging a complete set of
 * streams in pieces, with any interleaving of feeds and runs, gives the same
 * output as merging them whole.
 *
 * Input: either bytes (bft_merge_feed, decoded by a bft_stream the merger
 * owns per CPU) or decoded records (bft_merge_push).  Records of kinds not
 * in opts.kinds are not queued but still move their CPU's watermark.
 *
 * Memory: one growable queue per CPU; no allocation per record once the
 * queues have grown.  Functions return 0, -ENOMEM, -EINVAL (bad cpu, closed
 * cpu, time going backwards in push), -EPROTO (a CPU's decoder stopped; see
 * bft_merge_stream()), or the nonzero value on_record returned.
 */
#ifndef BFT_MERGE_H
#define BFT_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include "wire/bft_stream.h"

struct bft_merge_opts {
	uint32_t ncpus;
	/* BFT_REC_BIT() mask of the kinds to emit; 0 means all. */
	uint32_t kinds;
	/*
	 * Return 0 to continue; nonzero stops the run, which returns it.  It
	 * may not feed, advance or close this merge: r may be a queued record.
	 */
	int (*on_record)(void *ctx, const struct bft_record *r);
	void *ctx;
	/* For the decoders of bft_merge_feed (cpu, on_record, ctx ignored). */
	int (*on_error)(void *ctx, const struct bft_stream_error *e);
	void *err_ctx;
	enum bft_stream_action policy;
	/*
	 * bft_merge_feed() hands a record straight to on_record, queueing
	 * nothing, when its CPU has nothing queued and no other CPU can
	 * still deliver a record that sorts before it.  A busy CPU's records
	 * then skip the queue once the idle CPUs' watermarks have passed
	 * them.  The output is the same.
	 */
	int direct;
};

struct bft_merge_stats {
	uint64_t pushed;	/* records queued */
	uint64_t emitted;	/* records handed to on_record */
	uint64_t direct;	/* of those, straight from a feed (opts.direct) */
	uint64_t max_queued;	/* largest total of queued records seen */
};

struct bft_merge_cpu;

/* A CPU with queued records and the time of its first (the heap's key). */
struct bft_merge_head {
	uint64_t t;
	uint32_t cpu;
};

struct bft_merge {
	/* private */
	struct bft_merge_opts o;
	struct bft_merge_cpu *cpu;
	struct bft_merge_head *heap;	/* min (t, cpu) on top */
	uint32_t heap_len;
	uint64_t queued;
	struct bft_merge_stats st;
	/* the feed in progress may emit (opts.direct) records of this CPU
	 * that sort before lim: UINT32_MAX none */
	uint32_t direct_cpu;
	int direct_unbounded;	/* no other CPU can deliver anything */
	struct bft_merge_head direct_lim;
	int direct_err;		/* what on_record returned there */
};

int bft_merge_init(struct bft_merge *m, const struct bft_merge_opts *o);
void bft_merge_free(struct bft_merge *m);

/*
 * Decode bytes of cpu's stream into its queue.  Emits nothing, unless
 * opts.direct; then a nonzero value on_record returned is returned here,
 * after the bytes were decoded (the rest of them queued).
 */
int bft_merge_feed(struct bft_merge *m, uint32_t cpu, const void *buf,
		   size_t n);
/* Queue one decoded record of CPU r->cpu (emits nothing). */
int bft_merge_push(struct bft_merge *m, const struct bft_record *r);
/* cpu will deliver nothing earlier than t (known idle up to t). */
int bft_merge_advance(struct bft_merge *m, uint32_t cpu, uint64_t t);
/* cpu's input has ended: finishes its decoder, never blocks again. */
int bft_merge_close(struct bft_merge *m, uint32_t cpu);

/* Emit every record that is safe to emit now. */
int bft_merge_run(struct bft_merge *m);
/* No more input: close every CPU and emit everything queued. */
int bft_merge_drain(struct bft_merge *m);

/* The decoder bft_merge_feed uses for cpu: its stats and last error. */
struct bft_stream *bft_merge_stream(struct bft_merge *m, uint32_t cpu);
/* Records queued, in total and for one CPU. */
uint64_t bft_merge_queued(const struct bft_merge *m);
uint64_t bft_merge_cpu_queued(const struct bft_merge *m, uint32_t cpu);
const struct bft_merge_stats *bft_merge_stats(const struct bft_merge *m);

#endif /* BFT_MERGE_H */
