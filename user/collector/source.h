/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The collector's sources, inside: what every source shares (struct
 * source) and the table of operations each is (struct source_ops).  Two
 * tables: a live capture backend through its bft_backend.h table
 * (source_live.c, its method table and status in source_live_tables.c),
 * and replay (source_replay.c).  source.c dispatches collector.h's
 * source_* calls to them.
 */
#ifndef BFCOLLECTOR_SOURCE_H
#define BFCOLLECTOR_SOURCE_H

#include "collector.h"

struct source;

/*
 * NULL for a call a source has nothing to do for (source.c then does
 * nothing, or returns 0, false or NULL).
 */
struct source_ops {
	int (*pollfds)(struct source *s, struct pollfd *p, int max,
		       int *timeout_ms);
	void (*woke)(struct source *s, const struct pollfd *p, int n);
	/* source_read() before the end: 1 when every input has ended */
	int (*read)(struct coll *c);
	int (*mode_cmd)(struct coll *c, int cmd);
	int (*refresh_methods)(struct coll *c);
	int (*refresh_exceptions)(struct coll *c);
	void (*tick)(struct coll *c);
	char *(*thread_name)(struct coll *c, uint32_t tgid, uint32_t tid);
	bool (*targets_gone)(struct coll *c);
	/* source_stats() with st zeroed and s->reads allocated */
	int (*stats)(struct coll *c, struct source_stats *st);
	void (*log_costs)(struct coll *c);
	/* why --user cannot be honoured, or NULL */
	const char *(*root_only)(const struct source *s);
	void (*close)(struct source *s);
	/* records as they happen (not a file's): times count from now */
	bool live;
};

/* The first member of each source's own state. */
struct source {
	const struct source_ops *ops;
	uint32_t ncpus;
	uint8_t mode;		/* enum bft_mode */
	bool draining;
	bool ended;
	uint64_t *reads;	/* per CPU, for the counters */
};

/* ---- a live capture backend (source_live.c, source_live_tables.c) ---- */

struct bft_backend_ops;
struct bft_backend_rings;
struct bft_nl_status;

struct live {
	struct source s;
	const struct bft_backend_ops *be;
	void *h;		/* the backend's session */
	void *ev;		/* its events handle, if it has events */
	struct bft_backend_rings *rings;
	bool discarding;	/* what an earlier session left */
	uint64_t discarded;	/* bytes */
	uint64_t next_flush_ms;
	uint32_t nr_targets;
	bool had_targets;
	uint64_t flush_ms;
	uint64_t next_refresh_ms;
	/* the periodic look at the method table: what the kernel's status
	 * said at the last full read, and when that was */
	uint32_t seen_probes, seen_targets;
	uint64_t full_read_ms;
	/* the backend's status as last read, by anyone */
	uint32_t st_probes, st_targets;
	uint64_t st_ms;
	uint64_t dumps, dump_ns, checks;	/* for -v */
	/* what the loop's poll said of the rings' and the events' fds
	 * (source_woke()); without it, source_read() looks at both */
	bool gated, ring_woke, ev_woke;
	int ring_slot, ev_slot;
};

static inline struct live *live_of(struct source *s)
{
	return (struct live *)s;
}

/* source_live_tables.c: the method table, exception types and status */
bool live_session_running(uint8_t mode);
int live_refresh_methods(struct coll *c);
int live_refresh_exceptions(struct coll *c);
void live_look_at_methods(struct coll *c);
/* A start: what we learnt of ids before may name other things now. */
void live_started(struct coll *c);
/* Read the status into the source: mode, targets, counts. */
void live_update_status(struct coll *c);
int live_get_status(struct live *s, struct bft_nl_status *st);
void live_note_status(struct live *s, const struct bft_nl_status *st);

/* The look at the method table takes a wake-up within this of its time. */
#define LIVE_REFRESH_SLACK_MS	100

#endif /* BFCOLLECTOR_SOURCE_H */
