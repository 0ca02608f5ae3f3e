/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfcollector: the Bytefrog agent of bftrace.
 *
 * A record walks forward only:
 *
 *   source.c    per-CPU record streams, and the "kernel" that mode
 *               commands go to: one table of operations per source
 *               (source.h), which source.c dispatches to
 *   source_live.c  a capture backend, through its bft_backend.h table
 *               (bftrace.ko or BPF, as bft_backend_choose() says): its
 *               rings, events, mode commands and flush work
 *   source_live_tables.c  what the backend's session says besides the
 *               records: method table, exception types, status
 *   source_replay.c  recorded/synthetic stream files (--replay), with a
 *               simulation of the kernel's modes
 *   methods.c   the method table (BFT_CMD_GET_METHODS or a file), the
 *               signatures, and the inclusion/exclusion regexes
 *   patterns.c  those regexes, compiled and matched by PCRE2 within
 *               bounds of size, steps, depth and heap (HQ sends them)
 *   exceptions.c  the exception types (BFT_CMD_GET_EXCEPTIONS or a file)
 *   pipeline.c  bft_merge (time order) -> bft_calltree (per-thread shadow
 *               stacks) -> thread ids, maps, sequence numbers -> the
 *               protocol encoder, and the .flow files of --output
 *   hqlink.c    the control connection and the data connections to HQ:
 *               connect, handshake, reading and writing, buffers,
 *               heartbeats, reconnection; it moves bytes only, and
 *               hands each control message from HQ to commands.c
 *   commands.c  what HQ's control messages say: the configuration, the
 *               mode commands (to the source), the pause lease
 *   counters*.c  the counters agent (seed 003, --counters; counters.h):
 *               counters.c its connection and loop, counters_wire.c the
 *               session with the inspector, counters_set.c the counters
 *               and the sample set, counters_sample.c values and rates
 *   privs.c     --user: the switch to another user, with only the
 *               capabilities HQ's commands still need
 *   background.c  --background: fork, and tell the parent when we record
 *   main.c      options, the backend's choice, and the loop
 *
 * One thread: a poll loop.  Control messages go out on their own socket
 * and are written first, so they never wait behind data.
 */
#ifndef BFCOLLECTOR_H
#define BFCOLLECTOR_H

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "model/bft_callfilter.h"
#include "model/bft_calltree.h"
#include "wire/bft_flow.h"
#include "model/bft_merge.h"
#include "wire/bft_varint.h"
#include "wire/bfp_config.h"
#include "wire/bfp_msg.h"

#define COLL_MAX_SENDERS	64
/* poll slots for the source: the module's two, or replay FIFOs */
#define COLL_SOURCE_FDS		64

/* Exit codes (bfcollector.1). */
enum {
	EXIT_OK = 0,
	/* as bfctl and bfhq: 2 is a bad command line */
	EXIT_HQ = 1,		/* HQ unreachable, refused us, or sent an error */
	EXIT_USAGE = 2,
	EXIT_PROTOCOL = 3,	/* HQ sent something malformed */
	EXIT_FATAL = 4,		/* kernel or input failure */
};

#define COLL_MAX_CALLERS 16

struct coll_opts {
	const char *hq_host;	/* NULL: no HQ (--output only) */
	const char *hq_port;
	unsigned int protocol;	/* 1 or 2 */
	const char *outdir;	/* --output */
	const char *user;	/* --user: who to run as once set up */
	const char *replay_dir;	/* --replay: stream files instead of rings */
	const char *methods_file;
	const char *threads_file;
	const char *device;
	const char *backend;	/* kmod, bpf, auto; NULL: $BFT_BACKEND */
	unsigned int replay_chunk;
	unsigned int replay_delay_ms;
	unsigned int connect_timeout_s;	/* give up reaching HQ (0: never) */
	unsigned int handshake_ms;
	/* heartbeat intervals a pause of HQ's lasts without a word from HQ
	 * (0: as long as its control connection) */
	unsigned int pause_lease;
	bool until_exit;	/* finish when the traced processes are gone */
	bool background;	/* fork; the parent returns once we record */
	bool no_stop;		/* HQ's stop ends tracing, not bfcollector */
	bool ms_only;		/* no bftrace.us markers */
	bool data_udp;		/* --data-udp: data in datagrams (hqlink_udp.c) */
	uint64_t udp_rate;	/* --udp-rate: bytes/s of datagrams, 0: unpaced */
	const char *counters_host;	/* --counters: the inspector */
	const char *counters_port;
	unsigned int counters_ms;	/* sampling interval */
	uint64_t min_time_ns;	/* --min-time (0: none) */
	const char *callers[COLL_MAX_CALLERS];	/* --caller globs */
	unsigned int ncallers;
	int verbose;
};

/* ---- patterns.c ---- */

/*
 * What HQ's regexes may cost (bfcollector.1 tells HQ's authors): a
 * pattern's length, its nesting of parentheses, the compiled size of all
 * of them; a match's backtracking steps, depth and heap.
 */
#define COLL_PATTERN_MAX_LEN		4096
#define COLL_PATTERN_MAX_NEST		32
#define COLL_PATTERNS_MAX_COMPILED	(8u << 20)
#define COLL_MATCH_LIMIT		100000
#define COLL_MATCH_DEPTH		5000
#define COLL_MATCH_HEAP_KIB		4096

struct pattern {
	pcre2_code *code;
	char *text;
	bool disabled;		/* a match reached a limit */
};

struct patterns {
	struct pattern *v;
	uint32_t n, disabled;
	const char *what;	/* "inclusion", "exclusion" */
	pcre2_match_context *mc;
	pcre2_match_data *md;
};

/*
 * Compile list l into p (what names it in messages), adding the compiled
 * size to *compiled; 0, -EPROTO (err says which pattern and why) or
 * -ENOMEM.  p is empty after an error.
 */
int patterns_compile(struct patterns *p, const struct bfp_strlist *l,
		     const char *what, size_t *compiled, char *err,
		     size_t errlen);
/* Does a pattern match s from its first byte?  A limit reached: no. */
bool patterns_match(struct patterns *p, const char *s);
void patterns_free(struct patterns *p);

/* ---- methods.c ---- */

/*
 * The data connections (bit = index) that were told a name, in HQ session
 * `session`; in any other session, none.
 */
struct told {
	uint32_t session;
	uint64_t conns;
};

static inline bool told_on(const struct told *t, uint32_t session,
			   unsigned int conn)
{
	return t->session == session && (t->conns & 1ull << conn);
}

static inline void told_add(struct told *t, uint32_t session,
			    unsigned int conn)
{
	if (t->session != session) {
		t->session = session;
		t->conns = 0;
	}
	t->conns |= 1ull << conn;
}

struct method {
	uint32_t id;
	bool used;		/* hash slot */
	bool excluded;		/* by the configuration's regexes */
	bool known;		/* from the table, not made up */
	struct told mapped;	/* its signature under its id */
	char *sig;
	char *path;
	/* counters.c's: entries and frames left, seen in the stream (the
	 * excluded too); live: in the kernel's last table (methods.gen) */
	uint64_t calls, exits;
	uint32_t live_gen;
	/*
	 * Entries only (a probe without BFT_PF_RETURN): in every process
	 * (noret_all: a method file's flags), or in those of noret_tgids.
	 * One id can have exits in one process and not in another, so such
	 * entries go to HQ under a twin id, METHOD_NORET_TWIN(id), that
	 * HQ is told has no exits ("bftrace.noret"), with its own maps.
	 */
	bool noret_all;
	uint32_t n_noret, *noret_tgids;
	struct told twin_mapped;	/* the twin's map and marker */
};

/* Kernel and bfctl ids stay below 2^31 (bfctl numbers them from 1). */
#define METHOD_NORET_TWIN(id)	((id) | 0x80000000u)

struct methods {
	struct method *v;	/* open addressing on id */
	uint32_t cap, count;
	struct patterns incl, excl;
	struct object {
		char *path;
		uint8_t kind;	/* BFP_CLASS_TRANSFORMED, _IGNORED, _FAILED */
	} *objects;		/* what every new HQ session is told */
	uint32_t nobjects;
	uint32_t gen;		/* kernel table reads, for live_gen */
	/* changes of what an id names (a start, a signature replaced): an
	 * id checked against a signature since stays good until it moves */
	uint32_t renames;
	uint64_t counted;	/* events counted into calls and exits */
};

/* ---- exceptions.c ---- */

/* Exception ids of our own, beside the kernel's types (1, 2, ...). */
#define COLL_EXC_UNKNOWN	0u		/* a THROW of type 0 */
#define COLL_EXC_FORCED		0x7fffffffu	/* pthread_exit, _cancel */
#define COLL_EXC_LONGJMP	0x7ffffffeu	/* frames a longjmp left */

struct exc_type {
	uint32_t id;
	char *name;		/* demangled: "std::runtime_error" */
	struct told mapped;	/* its name */
};

struct exc_types {
	struct exc_type *v;
	uint32_t n, cap;
	uint32_t last;		/* index + 1 of the last one found */
};

/* ---- source.c ---- */

struct source;

/* What the counters sample of the source (source_stats). */
struct source_cpu_stats {
	uint64_t used;		/* bytes in the ring now (replay: 0) */
	uint64_t records;	/* events produced into it */
	uint64_t lost;
	uint64_t reads;		/* our reads that returned data */
};

struct source_stats {
	uint8_t mode;		/* enum bft_mode */
	uint32_t probes, targets;
	uint64_t hits;		/* probe hits the handlers saw */
	uint64_t lost;
	struct source_cpu_stats *cpu;	/* source_ncpus() of them, caller's */
};

struct counters;

/* ---- the collector ---- */

struct cthread {
	uint32_t tgid, tid;
	uint16_t wire_id;
	uint8_t conn;		/* its data connection, set with name_sent */
	bool name_sent;		/* in the current HQ session */
	bool seen;
	/* its name came with its records (NAME, uapi 2.2): they also tell
	 * of renames, so /proc is not asked again */
	bool name_recorded;
	char *name;		/* "<comm> (<tgid>/<tid>)" */
	struct bft_flow_writer flow;
	FILE *flow_file;
	uint64_t flow_depth;
	/* the exception it threw last (COLL_EXC_*, or a kernel type): what a
	 * rethrow of unknown type throws and what the frames it leaves carry */
	uint32_t exc;
	struct bft_callfilter_thread filt;	/* --min-time's hold */
};

struct dconn {
	int fd;
	/* out.data[sent..out.len) is still to be written: moving what is
	 * left to the front after every partial write would cost more */
	struct bft_buf out;
	size_t sent;
	/* ends (stream offsets) of the sequenced messages not yet written,
	 * a ring of ends_cap (a power of 2) */
	uint64_t *ends;
	uint32_t ends_head, ends_len, ends_cap;
	uint64_t written;	/* bytes written since the connection began */
	uint64_t queued;	/* bytes encoded since the connection began */
	uint32_t packets;	/* --data-udp: datagrams sent on this stream */
};

enum hq_state {
	HQ_NONE,		/* no HQ at all (--output only) */
	HQ_DOWN,		/* waiting to (re)connect */
	HQ_UP,			/* configured, data connections ready */
};

struct coll {
	struct coll_opts o;
	struct source *src;
	struct methods methods;
	struct exc_types exc;
	struct bft_merge merge;
	struct bft_calltree ct;
	struct bft_callfilter filt;	/* --min-time, --caller */
	/* threads */
	struct cthread **threads;	/* by wire id */
	uint32_t nthreads;
	uint32_t *thash;		/* (tgid, tid) -> index + 1 */
	uint32_t thash_cap;
	/* names of threads whose NAME came before any call (thread_named) */
	struct pending_name {
		uint32_t tgid, tid;
		char comm[BFT_THREAD_NAME_MAX + 1];
	} *pending;
	uint32_t npending, pending_cap;
	/* HQ session */
	enum hq_state hq;
	struct bfp_config config;
	bool configured;	/* a configuration was ever received */
	int ctl_fd;
	struct bft_buf ctl_in, ctl_out;
	struct dconn data[COLL_MAX_SENDERS];
	unsigned int ndata;
	uint64_t hello_ns;		/* CLOCK_MONOTONIC at hello */
	uint64_t base_ns;		/* stream time of relative time 0 */
	bool have_base;
	uint32_t session;		/* HQ sessions begun */
	uint32_t seq;			/* next sequence number */
	bool break_sent;		/* a break at seq was sent already */
	/* bftrace.us: the sub-ms parts of the messages since the last one */
	struct bft_buf us;
	uint32_t us_n;
	bool us_declared;		/* one was sent in this session */
	uint64_t next_heartbeat_ms;
	uint64_t next_connect_ms;
	uint64_t down_since_ms;
	unsigned int backoff_ms;
	bool ever_up;
	bool hq_wants_suspend;	/* suspend came before start */
	bool suspended_for_hq;	/* we suspended because HQ was lost */
	bool started;		/* HQ said start */
	/* HQ's pause holds the targets stopped: undone when HQ goes or falls
	 * silent for the lease (hq_pause_guard) */
	bool paused_for_hq;
	uint32_t pause_session;		/* the HQ session that paused */
	uint64_t hq_heard_ms;		/* HQ's last control message */
	bool stopping;		/* drain and leave */
	bool replay_suspended;	/* replay's mode is SUSPENDED: records dropped */
	bool draining_done;
	int exit_code;
	/* accounting */
	uint64_t lost_kernel;		/* LOST records */
	uint64_t lost_gaps;		/* stream decoder gaps */
	uint64_t lost_undelivered;	/* encoded, never written to HQ */
	uint64_t lost_unsent;		/* produced while HQ was down */
	uint64_t lost_reported;		/* sum of the markers sent */
	uint64_t suspended_dropped;	/* replay: records while suspended */
	uint64_t events_sent, excluded;
	uint64_t marks_sent;		/* USDT hits sent as markers */
	uint64_t throws, bubbles;	/* Exception, ExceptionBubble sent */
	uint64_t throws_outside;	/* thrown with no traced frame open */
	uint64_t breaks_sent;
	uint64_t last_stamp;		/* the last relative time sent */
	uint64_t heartbeats;		/* sent to HQ */
	/* --data-udp (hqlink_udp.c): the socket, the pacing, the counts */
	int udp_fd;
	uint64_t udp_tokens;		/* bytes the pace allows now */
	uint64_t udp_refill_ns;		/* when the tokens were counted */
	uint64_t udp_next_ms;		/* paced: send again then (0: now) */
	uint64_t udp_dgrams, udp_bytes, udp_msgs, udp_paced, udp_dropped;
	struct counters *ctr;		/* --counters */
	int outdir_fd;			/* --output, opened at the start */
	bool outdir_made;		/* by us: ours to hand to --user */
	bool input_ended;
	int ready_fd;		/* --background's pipe to the parent, or -1 */
};

uint64_t coll_now_ms(void);
uint64_t coll_mono_ns(void);

/* Shorten a poll timeout (-1: none yet) to end at at_ms at the latest. */
static inline void coll_wait_until(uint64_t at_ms, int *timeout_ms)
{
	uint64_t now = coll_now_ms();
	int wait = now >= at_ms ? 0 :
		   (int)(at_ms - now > INT32_MAX ? INT32_MAX : at_ms - now);

	if (*timeout_ms < 0 || *timeout_ms > wait)
		*timeout_ms = wait;
}
void coll_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* methods.c */
int methods_load_file(struct methods *m, const char *path);
int methods_add(struct methods *m, uint32_t id, const char *path,
		const char *name, uint64_t offset);
/*
 * The id itself: bfctl numbers probes 1, 2, 3... in both backends,
 * so neighbouring ids take neighbouring slots, ids below the table's
 * size never collide, and the hot low ids share cache lines.  Larger
 * ids (a --methods file's, a made-up one) probe on as before.
 */
static inline uint32_t methods_slot(uint32_t id, uint32_t cap)
{
	return id & (cap - 1);
}

/* Inline: every event looks its method up. */
static inline struct method *methods_get(struct methods *m, uint32_t id)
{
	uint32_t s;

	if (!m->cap)
		return NULL;
	for (s = methods_slot(id, m->cap); m->v[s].used;
	     s = (s + 1) & (m->cap - 1))
		if (m->v[s].id == id)
			return &m->v[s];
	return NULL;
}

/* Whether process tgid has me's entries without exits. */
static inline bool method_noret(const struct method *me, uint32_t tgid)
{
	uint32_t i;

	if (me->noret_all)
		return true;
	for (i = 0; i < me->n_noret; i++)
		if (me->noret_tgids[i] == tgid)
			return true;
	return false;
}

/* The kernel's word on me in tgid (0: every process): flags BFT_PF_*. */
int method_set_flags(struct method *me, uint32_t tgid, uint32_t flags);
/* Compile the configuration's regexes and decide every method again. */
int methods_set_filter(struct methods *m, const struct bfp_config *c,
		       char *err, size_t errlen);
static inline bool methods_excluded(struct methods *m, struct method *me)
{
	(void)m;
	return me->excluded;
}
/* The kernel's ids after a start: every probe's id is forgotten. */
void methods_forget(struct methods *m);
/* Record an object's fate; true if that is news (to report to HQ). */
bool methods_object(struct methods *m, const char *path, uint8_t kind);
void methods_free(struct methods *m);

/* ---- background.c ---- */

/* Fork for --background: returns in the child; the parent exits. */
int coll_background(struct coll *c);
/* We record: --background's parent may return (once; no-op otherwise). */
void coll_ready(struct coll *c);

/* exceptions.c */
int exc_types_init(struct exc_types *x);
/* A kernel type id (1 ...) and its type_info name. */
int exc_types_add(struct exc_types *x, uint32_t id, const char *mangled);
struct exc_type *exc_types_get(struct exc_types *x, uint32_t id);
/* "id\tname" lines (names as type_info gives them); no file: no types. */
int exc_types_load_file(struct exc_types *x, const char *path);
/* The kernel's types after a start (ours stay). */
void exc_types_forget(struct exc_types *x);
void exc_types_free(struct exc_types *x);

/* source.c, source_live.c, source_replay.c */
struct bft_backend_ops;
/* A capture backend's rings (the table bft_backend_choose() gave). */
int source_open_live(struct coll *c, const struct bft_backend_ops *be,
		     char *err, size_t errlen);
/* --replay's stream files. */
int source_open_replay(struct coll *c, char *err, size_t errlen);
void source_close(struct source *s);
/* Poll descriptors the loop waits on; returns how many were filled. */
int source_pollfds(struct source *s, struct pollfd *p, int max,
		   int *timeout_ms);
/* What the poll said of those fds (n: how many source_pollfds() gave). */
void source_woke(struct source *s, const struct pollfd *p, int n);
/* Read what is there into the merge; 1 when every input has ended. */
int source_read(struct coll *c);
/* Stop reading (stop, signal): what remains is drained. */
void source_drain(struct coll *c);
/* BFT_CMD_START, ...: 0 or -errno; the mode in force in *mode. */
int source_mode_cmd(struct coll *c, int cmd);
uint8_t source_mode(struct coll *c);	/* enum bft_mode */
/* A live source (a backend's rings), not stream files. */
bool source_is_kernel(const struct source *s);
/* Why the source cannot go on once root is left (--user), or NULL. */
const char *source_root_only(const struct source *s);
/* Reload the method table (kernel: GET_METHODS). */
int source_refresh_methods(struct coll *c);
/* Reload the exception types (kernel: GET_EXCEPTIONS). */
int source_refresh_exceptions(struct coll *c);
/* Kernel events and statistics, once per heartbeat. */
void source_tick(struct coll *c);
/* A thread's name as the system knows it, or NULL. */
char *source_thread_name(struct coll *c, uint32_t tgid, uint32_t tid);
bool source_targets_gone(struct coll *c);
uint32_t source_ncpus(struct source *s);
/* Counts for the counters agent: 0, or -errno (kernel unreachable). */
int source_stats(struct coll *c, struct source_stats *st);
/* -v: what reading the method table cost. */
void source_log_costs(struct coll *c);

/* pipeline.c */
int pipeline_init(struct coll *c, unsigned int ncpus);
void pipeline_free(struct coll *c);
/* Records are ready in the merge: emit what is safe. */
int pipeline_run(struct coll *c);
/* Input ended: emit everything. */
int pipeline_drain(struct coll *c);
/* A synthetic break: stacks void, a data break goes to HQ. */
void pipeline_break(struct coll *c);
/* A new HQ session: thread names and signatures are sent again. */
void pipeline_new_session(struct coll *c);
/* Report lost events to HQ (a marker) if any are unreported. */
void pipeline_report_lost(struct coll *c);
/* Method id, looked up again in the capture's table if it is new to us
 * (a probe attached since), else made up as "method<id>"; NULL: ENOMEM. */
struct method *pipeline_method(struct coll *c, uint32_t id);
/* A sequenced marker key=value to HQ; 0 or an error. */
int pipeline_marker(struct coll *c, const char *key, const char *value);
/* A call event that passed the filters, to HQ and .flow. */
int pipeline_deliver(struct coll *c, struct cthread *t,
		     const struct bft_call_event *ev);

/* Send the sub-millisecond times of what was sent (a bftrace.us marker). */
void pipeline_report_us(struct coll *c);
/* Per-thread names, re-read for renames. */
void pipeline_check_renames(struct coll *c);

/* flow_files.c: --output */
/* A new thread's .flow file (none, logged, if it cannot be made). */
void flow_file_open(struct coll *c, struct cthread *t);
/* The .flow files closed, ids.properties and threads written; 0 or -errno. */
int flow_files_finish(struct coll *c);

/* filters.c: --min-time and --caller */
int filters_opt_min_time(struct coll_opts *o, const char *arg);
int filters_opt_caller(struct coll_opts *o, const char *arg);
void filters_init(struct coll *c);
/* At the end: what the threads still hold goes out. */
int filters_finish(struct coll *c);
/* The calls they dropped: to HQ as markers, and to the log. */
void filters_report(struct coll *c);

/* hqlink.c */
int hq_connect(struct coll *c);		/* 0 up, -errno not (retry later) */
void hq_down(struct coll *c, const char *why);
/* Encoding into a data connection (maps and events). */
int hq_data_msg(struct coll *c, unsigned int conn, const struct bfp_msg *m);
/* Room for one more MethodEntry/Exit in d: out's bytes and ends' slot. */
int hq_data_room(struct dconn *d);
/* After d's bytes up to d->sent went out: drop them, cheaply. */
void hq_data_compact(struct dconn *d);

/*
 * The same for the messages of nearly every event: MethodEntry/Exit.
 * Inline, as every event runs it.
 */
static inline int hq_data_call(struct coll *c, unsigned int conn, uint8_t id,
			       uint32_t time, uint32_t seq, uint32_t method,
			       uint16_t thread)
{
	struct dconn *d = &c->data[conn];
	size_t n;

	if ((d->out.cap - d->out.len < BFP_CALL_MAX ||
	     d->ends_len == d->ends_cap) && hq_data_room(d))
		return -ENOMEM;
	n = bfp_put_call(d->out.data + d->out.len, c->o.protocol, id, time,
			 seq, method, thread, 0, false);
	d->out.len += n;
	d->queued += n;
	d->ends[(d->ends_head + d->ends_len++) & (d->ends_cap - 1)] = d->queued;
	return 0;
}
int hq_control_msg(struct coll *c, const struct bfp_msg *m);

/* hqlink_udp.c: --data-udp */
/* The datagram socket to HQ's host and port: 0 or -errno (logged). */
int udp_open(struct coll *c);
void udp_close(struct coll *c);
/* Send the streams' whole messages as datagrams, as the pace allows. */
int udp_flush(struct coll *c);
/* On control: the last datagram and sequence number of every stream. */
void udp_end(struct coll *c);
void hq_send_error_and_close(struct coll *c, const char *text);
void hq_flush(struct coll *c);
/* Pending data bytes (the send queue), over all data connections. */
uint64_t hq_pending(const struct coll *c);
int hq_pollfds(struct coll *c, struct pollfd *p, int max);
/* After poll: read control input, write what can be written. */
void hq_io(struct coll *c, const struct pollfd *p, int n);
void hq_heartbeat(struct coll *c, bool force);
/* Wait (bounded) until everything is written, then close cleanly. */
void hq_shutdown(struct coll *c);
/* HQ sent something malformed: tell it, close, exit EXIT_PROTOCOL. */
void hq_protocol_error(struct coll *c, const char *what);
/* HQ reported an error: close, exit EXIT_HQ. */
void hq_peer_error(struct coll *c);

/* commands.c */
/* Decode and act on the whole control messages buffered in ctl_in. */
void coll_commands(struct coll *c);
/* A configuration from HQ: checked, kept, its regexes compiled. */
int coll_apply_config(struct coll *c, const struct bfp_config *cfg,
		      char *err, size_t errlen);
/*
 * Control bytes from HQ, acted on as if read from its socket: the path
 * without a socket, for tests and fuzzing.
 */
void hq_control_feed(struct coll *c, const void *p, size_t n);
/*
 * A paused target must not outlive the HQ that paused it: unpause when
 * HQ's connection is gone or HQ said nothing for the pause lease.  From
 * the loop, outside any callback.  hq_pause_deadline(): when the lease
 * ends (0: no lease running).
 */
void hq_pause_guard(struct coll *c);
uint64_t hq_pause_deadline(const struct coll *c);
void hq_pause_release(struct coll *c, const char *why);

/* privs.c: after the source, the pipeline and the counters are set up */
int coll_drop_privileges(struct coll *c, char *err, size_t errlen);

/* counters.c: nothing here may block the loop */
int counters_init(struct coll *c);
void counters_free(struct coll *c);
/* Its socket, if any, and the time to the next sample. */
int counters_pollfds(struct coll *c, struct pollfd *p, int max,
		     int *timeout_ms);
/* After poll: connect, read requests, write, sample when due. */
void counters_io(struct coll *c, const struct pollfd *p, int n);
/* An inspector is connected, or being connected to. */
bool counters_connected(const struct coll *c);
/* A connected socket as the inspector's (tests): Hello goes out. */
int counters_adopt(struct coll *c, int fd);
/* Requests from the inspector, as if read from its socket (tests). */
void counters_feed(struct coll *c, const void *p, size_t n);
/* A last sample, written if the socket takes it, then close. */
void counters_shutdown(struct coll *c);

#endif /* BFCOLLECTOR_H */
