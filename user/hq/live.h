/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live trace directory, trace-<N>/live/ (docs/live-format.md): its
 * constants, and the reader bfhq --replay and bfhq --http share.
 */
#ifndef BFHQ_LIVE_H
#define BFHQ_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define LIVE_FORMAT		1
#define LIVE_MARKERS		65536u	/* the stream of markers' id */
#define LIVE_INDEX_RECORD	40	/* bytes per index entry */
#define LIVE_FLAG_FINAL		1u

/*
 * An index record (docs/live-format.md): data offset, size, begin time,
 * end time (u64 each), events, flags (u32 each), little-endian.
 */
struct live_index_entry {
	uint64_t offset, size, begin, end;
	uint32_t events, flags;
};

/* The wall clock (CLOCK_REALTIME) in microseconds: --live-stamps' times. */
uint64_t live_wall_us(void);

/* The LIVE_INDEX_RECORD bytes at p. */
void live_index_decode(const unsigned char *p, struct live_index_entry *e);

/* One stream as far as a reader may show it. */
struct live_stream {
	uint32_t id;		/* Bytefrog thread id, or LIVE_MARKERS */
	char *data;		/* whole lines up to the frontier, NUL-ended */
	size_t len;
	uint64_t lines;		/* in data */
	uint64_t entries;	/* complete index entries */
	uint64_t indexed;	/* data bytes they cover */
	uint64_t end_us;	/* the latest entry's end time */
	uint64_t held;		/* covered lines later than the frontier */
	bool final;		/* its last entry is the trace's last */
};

struct live_view {
	json_t *meta;		/* meta.json, NULL if absent or unreadable */
	char *meta_text;	/* its text, NUL-ended; NULL if absent */
	size_t meta_len;
	bool have_frontier;	/* some stream has an index entry */
	uint64_t frontier_us;	/* min over streams of end_us */
	struct live_stream *streams;	/* by id */
	size_t nstreams;
	char *names;		/* the complete lines of names, NUL-ended */
	size_t names_len;
	uint64_t torn;		/* torn index records and name lines ignored */
	uint64_t bad;		/* entries that do not fit their data: ignored */
};

/*
 * Read the live directory dir up to its safe frontier.  0, or -errno if
 * dir cannot be read at all; anything wrong inside is counted, not fatal.
 */
int live_read(const char *dir, struct live_view *v);
/* The same but meta.json's text is left unparsed (meta stays NULL). */
int live_read_streams(const char *dir, struct live_view *v);
void live_view_free(struct live_view *v);

/* One line of a stream, parsed. */
struct live_line {
	char op;		/* e x t ! u m | */
	uint32_t seq;
	uint64_t time_us;
	uint32_t method, exception, line;	/* as the op has them */
	char cause[8];		/* |: break, gap, lost */
	uint32_t first, count;	/* |: the missing numbers */
	const char *text;	/* m: "key\tvalue", escaped */
	size_t text_len;
};

/* Parse the line s (n bytes, no '\n'): 0, or -EINVAL. */
int live_parse_line(const char *s, size_t n, struct live_line *l);

#endif /* BFHQ_LIVE_H */
