/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfcollector's counters agent (seed 003), private to its files:
 *
 *   counters.c         the connection to the inspector and the loop's
 *                      part: connecting, reading, writing, the grid
 *   counters_wire.c    the session: Hello and the answers to requests
 *   counters_set.c     the counters there are, their names and headers,
 *                      the sample set
 *   counters_sample.c  a counter's value, rates, a Sample
 */
#ifndef BFC_COUNTERS_H
#define BFC_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/bfc_wire.h"
#include "collector.h"

/* What waits to be written: a few samples of a thousand counters. */
#define OUT_MAX		(256u * 1024)
/* A request is at most two strings of BFC_MAX_STRING. */
#define IN_MAX		(4 * BFC_MAX_STRING)
#define BACKOFF_MAX_MS	2000

enum kind {
	/* Method, arg = method id */
	K_CALLS, K_EXITS, K_CALL_RATE,
	/* Ring, arg = cpu */
	K_RING_USED, K_RING_RECORDS, K_RING_LOST, K_RING_READS,
	/* Collector */
	K_EV_IN_RATE, K_EV_OUT_RATE, K_HQ_BYTE_RATE, K_HQ_QUEUE, K_HQ_CONNS,
	K_HEARTBEATS, K_CPU, K_RSS, K_INPUT_OPEN, K_DROPPED,
	/* Kernel */
	K_MODE, K_PROBES, K_TARGETS, K_HITS, K_LOST,
	K__COUNT
};

/*
 * Each counter: its category, name (a method's and a ring's follow their
 * signature or "cpuN"), and the header numbers of bfc_wire.h: type,
 * unit, variance.
 */
struct cdef {
	int32_t cat;
	const char *name;
	int32_t type, unit, variance;
};

extern const struct cdef counter_defs[K__COUNT];

/* A counter in the sample set. */
struct entry {
	enum kind kind;
	uint32_t arg;
	int16_t index;
	/* a method's signature: a start numbers the probes anew, so the id
	 * (arg) is checked against it, and the last value stays if it is
	 * gone */
	char *sig;
	uint32_t renames;	/* methods.renames when arg was checked */
	int64_t last_iv;
	/* what the inspector last got, for BFC_CHANGES */
	bool sent;
	uint8_t sent_size;
	uint8_t sent_bytes[8];
	/* rates: the count and time of the last sample */
	uint64_t last, last_ns;
};

enum cstate { C_DOWN, C_CONNECTING, C_UP };

struct counters {
	enum cstate state;
	int fd;
	struct bft_buf in, out;
	uint64_t next_connect_ms;
	unsigned int backoff_ms;
	bool bye;		/* Good Bye: no reconnecting */
	bool dropping;		/* logged that samples are dropped */
	bool changes_only;	/* BFC_CHANGES 1: send what changed */
	/* methods.counted and .renames at the last sample: with neither
	 * moved, no method's count did */
	uint64_t last_counted;
	uint32_t last_renames;
	uint64_t next_lookup_ms;	/* an Add that misses reads the table */
	struct entry *set;
	uint32_t nset;
	int16_t next_index;
	uint64_t next_ns;	/* next sample, on a fixed grid */
	uint64_t interval_ns;
	struct source_stats st;	/* read once per sample, if needed */
	struct bfc_value *vals;	/* a sample's values and their bytes */
	uint8_t *bytes;
	uint32_t vcap;
	uint64_t samples, dropped, skipped;
	int statm_fd;		/* for RSS */
	/* -v: the CPU time samples took, and reading the status in them */
	uint64_t sample_ns, status_ns, write_ns;
	/* CPU %: process CPU time at the last sample, and at this one
	 * (a system call: read once a sample) */
	uint64_t cpu_ns, cpu_at_ns, cpu_now_ns;
};

static inline bool kind_is_method(enum kind k)
{
	return k <= K_CALL_RATE;
}

static inline bool kind_is_ring(enum kind k)
{
	return k >= K_RING_USED && k <= K_RING_READS;
}

/* counters_set.c */
void sample_set_remove(struct counters *t, uint32_t i);
void sample_set_clear(struct counters *t);
/* A counter joins the set with the next index; NULL if none is left. */
struct entry *sample_set_add(struct counters *t, enum kind k, uint32_t arg);
/* "<sig> calls", "cpu3 lost", "RSS" into buf: 0, or -1. */
int counter_name(struct coll *c, enum kind k, uint32_t arg, char *buf,
		 size_t len);
bool counter_method_live(const struct coll *c, const struct method *me);
/* Name and category to a counter; false if there is none such now. */
bool counter_lookup(struct coll *c, const char *name, const char *cat,
		    enum kind *k, uint32_t *arg);
/* e's header into h, its name into name (len bytes). */
void counter_header(struct coll *c, const struct entry *e,
		    struct bfc_header *h, char *name, size_t len);

/* counters_wire.c */
/* The connection is closed, why logged if it was up; retried later. */
void inspector_drop(struct coll *c, const char *why);
/* Queue a message; an inspector that reads nothing loses its connection. */
int inspector_send(struct coll *c, const struct bfc_msg *m);
/* The sample set a connection begins with, said in Hello. */
void inspector_hello(struct coll *c);

/* counters_sample.c */
uint64_t counters_cpu_ns(void);
uint64_t counters_stamp_ns(void);
/* A rate starts from when it joins the sample set. */
void entry_prime(struct coll *c, struct entry *e);
/* A Sample of the set at now (the monotonic clock), queued. */
void counters_sample(struct coll *c, uint64_t now);

#endif /* BFC_COUNTERS_H */
