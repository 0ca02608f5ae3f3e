// SPDX-License-Identifier: GPL-2.0
/*
 * The Perfetto protobuf writer (pftrace.h).  Field numbers are those of
 * Perfetto's protos/perfetto/trace (trace.proto, trace_packet.proto,
 * the track_event protos, interned_data/interned_data.proto); a message is
 * built in a buffer per nesting level, then put in its parent with its
 * length.  Every packet is on one sequence: the first clears its
 * incremental state, the others need it (their interned names).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bft_varint.h"
#include "intern.h"
#include "pftrace.h"

/* Trace */
#define TRACE_PACKET		1
/* TracePacket */
#define TP_TIMESTAMP		8
#define TP_SEQUENCE_ID		10	/* trusted_packet_sequence_id */
#define TP_TRACK_EVENT		11
#define TP_INTERNED_DATA	12
#define TP_SEQUENCE_FLAGS	13
#define TP_TRACK_DESCRIPTOR	60
#define SEQ_STATE_CLEARED	1
#define SEQ_NEEDS_STATE		2
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define TD_UUID			1
#define TD_NAME			2
#define TD_PROCESS		3
#define TD_THREAD		4
#define TD_PARENT_UUID		5
#define PD_PID			1
#define THD_PID			1
#define THD_TID			2
#define THD_NAME		5
/* TrackEvent and its DebugAnnotation */
#define TE_ANNOTATION		4
#define TE_TYPE			9
#define TE_NAME_IID		10
#define TE_TRACK_UUID		11
#define TYPE_SLICE_BEGIN	1
#define TYPE_SLICE_END		2
#define TYPE_INSTANT		3
#define DA_UINT			3
#define DA_STRING		6
#define DA_NAME			10
/* InternedData, EventName */
#define ID_EVENT_NAMES		2
#define EN_IID			1
#define EN_NAME			2

#define WT_VARINT		0
#define WT_LEN			2

#define SEQUENCE		1
/*
 * Track uuids, small since every event names its track: threads from 1
 * (16-bit ids), then the markers, then processes by pid.
 */
#define UUID_THREAD(id)		(1ULL + (id))
#define UUID_MARKERS		(1ULL << 17)
#define UUID_PROCESS(pid)	((1ULL << 18) + (pid))

struct pftrace {
	FILE *f;
	int err;
	/* a buffer per nesting level: packet, its message, that one's */
	struct bft_buf lv[4];
	struct intern names;
	uint32_t *pids;		/* processes with a track */
	size_t npids, pids_cap;
};

static void put_raw(struct pftrace *p, struct bft_buf *b, const void *d,
		    size_t n)
{
	if (!p->err && bft_buf_append(b, d, n))
		p->err = -ENOMEM;
}

static void put_varint(struct pftrace *p, struct bft_buf *b, uint64_t v)
{
	uint8_t tmp[10];

	put_raw(p, b, tmp, bft_leb128_put(tmp, v));
}

static void put_uint(struct pftrace *p, struct bft_buf *b, unsigned int field,
		     uint64_t v)
{
	put_varint(p, b, (uint64_t)field << 3 | WT_VARINT);
	put_varint(p, b, v);
}

static void put_bytes(struct pftrace *p, struct bft_buf *b,
		      unsigned int field, const void *d, size_t n)
{
	put_varint(p, b, (uint64_t)field << 3 | WT_LEN);
	put_varint(p, b, n);
	put_raw(p, b, d, n);
}

static void put_str(struct pftrace *p, struct bft_buf *b, unsigned int field,
		    const char *s)
{
	put_bytes(p, b, field, s, strlen(s));
}

/* Level k's message into level k - 1 as field, and level k emptied. */
static void close_level(struct pftrace *p, unsigned int k, unsigned int field)
{
	put_bytes(p, &p->lv[k - 1], field, p->lv[k].data, p->lv[k].len);
	p->lv[k].len = 0;
}

/* Level 0, a TracePacket, to the file. */
static void emit(struct pftrace *p)
{
	uint8_t head[11];
	unsigned int n;

	head[0] = TRACE_PACKET << 3 | WT_LEN;
	n = 1 + bft_leb128_put(head + 1, p->lv[0].len);
	if (!p->err && (fwrite(head, 1, n, p->f) != n ||
			fwrite(p->lv[0].data, 1, p->lv[0].len, p->f) !=
			p->lv[0].len))
		p->err = -EIO;
	p->lv[0].len = 0;
}

/*
 * The iid of name; a name not seen before goes into the packet being built
 * (level 0) as InternedData, which must come before its TrackEvent.
 */
static uint64_t intern(struct pftrace *p, const char *name)
{
	bool fresh;
	uint64_t iid = intern_id(&p->names, name, &fresh);

	if (!iid) {
		p->err = -ENOMEM;
		return 0;
	}
	if (fresh) {
		put_uint(p, &p->lv[2], EN_IID, iid);
		put_str(p, &p->lv[2], EN_NAME, name);
		close_level(p, 2, ID_EVENT_NAMES);
		close_level(p, 1, TP_INTERNED_DATA);
	}
	return iid;
}

struct pftrace *pft_open(const char *path)
{
	struct pftrace *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->f = fopen(path, "w");
	if (!p->f) {
		free(p);
		return NULL;
	}
	/* the sequence starts clean, with the markers' track */
	put_uint(p, &p->lv[0], TP_SEQUENCE_ID, SEQUENCE);
	put_uint(p, &p->lv[0], TP_SEQUENCE_FLAGS, SEQ_STATE_CLEARED);
	put_uint(p, &p->lv[1], TD_UUID, UUID_MARKERS);
	put_str(p, &p->lv[1], TD_NAME, "markers");
	close_level(p, 1, TP_TRACK_DESCRIPTOR);
	emit(p);
	return p;
}

void pft_thread(struct pftrace *p, uint16_t thread, uint32_t pid,
		uint32_t tid, const char *name)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->npids && p->pids[i] != pid; i++)
		;
	if (i == p->npids) {
		if (p->npids == p->pids_cap) {
			size_t cap = p->pids_cap ? p->pids_cap * 2 : 8;
			uint32_t *v = realloc(p->pids, cap * sizeof(*v));

			if (!v) {
				p->err = -ENOMEM;
				return;
			}
			p->pids = v;
			p->pids_cap = cap;
		}
		p->pids[p->npids++] = pid;
		put_uint(p, &p->lv[0], TP_SEQUENCE_ID, SEQUENCE);
		put_uint(p, &p->lv[1], TD_UUID, UUID_PROCESS(pid));
		put_uint(p, &p->lv[2], PD_PID, pid);
		close_level(p, 2, TD_PROCESS);
		close_level(p, 1, TP_TRACK_DESCRIPTOR);
		emit(p);
	}
	/* again at a rename: the newest descriptor names the thread */
	put_uint(p, &p->lv[0], TP_SEQUENCE_ID, SEQUENCE);
	put_uint(p, &p->lv[1], TD_UUID, UUID_THREAD(thread));
	put_uint(p, &p->lv[1], TD_PARENT_UUID, UUID_PROCESS(pid));
	put_uint(p, &p->lv[2], THD_PID, pid);
	put_uint(p, &p->lv[2], THD_TID, tid);
	put_str(p, &p->lv[2], THD_NAME, name);
	close_level(p, 2, TD_THREAD);
	close_level(p, 1, TP_TRACK_DESCRIPTOR);
	emit(p);
}

/* A TrackEvent packet's start: its interned name, time and track. */
static void event(struct pftrace *p, uint64_t track, uint64_t ns,
		  unsigned int type, const char *name)
{
	uint64_t iid = name ? intern(p, name) : 0;

	put_uint(p, &p->lv[0], TP_TIMESTAMP, ns);
	put_uint(p, &p->lv[0], TP_SEQUENCE_ID, SEQUENCE);
	put_uint(p, &p->lv[0], TP_SEQUENCE_FLAGS, SEQ_NEEDS_STATE);
	put_uint(p, &p->lv[1], TE_TYPE, type);
	put_uint(p, &p->lv[1], TE_TRACK_UUID, track);
	if (name)
		put_uint(p, &p->lv[1], TE_NAME_IID, iid);
}

static void event_end(struct pftrace *p)
{
	close_level(p, 1, TP_TRACK_EVENT);
	emit(p);
}

void pft_begin(struct pftrace *p, uint16_t thread, uint64_t ns,
	       const char *name)
{
	if (!p)
		return;
	event(p, UUID_THREAD(thread), ns, TYPE_SLICE_BEGIN, name);
	event_end(p);
}

void pft_end(struct pftrace *p, uint16_t thread, uint64_t ns)
{
	if (!p)
		return;
	event(p, UUID_THREAD(thread), ns, TYPE_SLICE_END, NULL);
	event_end(p);
}

void pft_instant(struct pftrace *p, uint16_t thread, uint64_t ns,
		 const char *name, uint64_t count)
{
	if (!p)
		return;
	event(p, UUID_THREAD(thread), ns, TYPE_INSTANT, name);
	if (count > 1) {
		put_str(p, &p->lv[2], DA_NAME, "calls");
		put_uint(p, &p->lv[2], DA_UINT, count);
		close_level(p, 2, TE_ANNOTATION);
	}
	event_end(p);
}

static void marker_on(struct pftrace *p, uint64_t track, uint64_t ns,
		      const char *key, const char *value)
{
	if (!p)
		return;
	event(p, track, ns, TYPE_INSTANT, key);
	put_str(p, &p->lv[2], DA_NAME, "value");
	put_str(p, &p->lv[2], DA_STRING, value);
	close_level(p, 2, TE_ANNOTATION);
	event_end(p);
}

void pft_marker(struct pftrace *p, uint64_t ns, const char *key,
		const char *value)
{
	marker_on(p, UUID_MARKERS, ns, key, value);
}

void pft_thread_marker(struct pftrace *p, uint16_t thread, uint64_t ns,
		       const char *key, const char *value)
{
	marker_on(p, UUID_THREAD(thread), ns, key, value);
}

int pft_close(struct pftrace *p)
{
	int err;
	size_t i;

	if (!p)
		return 0;
	if (fclose(p->f) && !p->err)
		p->err = -errno;
	err = p->err;
	intern_free(&p->names);
	free(p->pids);
	for (i = 0; i < 4; i++)
		bft_buf_free(&p->lv[i]);
	free(p);
	return err;
}
