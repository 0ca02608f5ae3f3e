/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfhq: the HQ end of the Bytefrog protocol.
 *
 * One thread, one poll loop.  Sockets are non-blocking; every connection
 * has an input buffer (messages are decoded once whole) and an output
 * buffer (written when the socket can take it).
 *
 *   conn.c    listening, accepting, greeting (notes §4.1), reading and
 *             writing, the local control socket
 *   trace.c   one agent's trace: run id, configuration, control messages,
 *             data connections, reordering by sequence with data breaks and
 *             gap reporting
 *   micro.c   the microseconds of bftrace.us markers, for the route
 *   duration.c  durations in the unit that reads well
 *   route*.c  what ordered events become: per-thread shadow stacks, the
 *             text call tree, Chrome trace JSON, folded stacks, the summary
 *             (route.h says which file does what)
 *   escape.c  the escaping of names and markers in text files, and its
 *             inverse
 *   live_write.c  the live copy of a trace, written while it is received
 *             (docs/live-format.md)
 *   live_meta.c   its meta.json
 *   live_read.c   reading a live copy up to its safe frontier
 *   replay.c  bfhq --replay: the usual outputs from a live copy
 *   http.c    bfhq --http: the live viewer's server (libmicrohttpd)
 *   http_feed.c  what one viewer is sent: a live copy tailed, as
 *             Server-Sent Events
 *   udp.c     --udp: data messages in datagrams, checked, deduplicated,
 *             counted
 *   hq.c      the clock, the log, taking connections and traces down
 *   main.c    options and the loop
 */
#ifndef BFHQ_H
#define BFHQ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "wire/bft_varint.h"
#include "wire/bfp_config.h"
#include "wire/bfp_msg.h"
#include "escape.h"

#define HQ_DEFAULT_PORT		7000
#define HQ_GREET_TIMEOUT_MS	5000	/* for the first two bytes */
#define HQ_DATA_WAIT_MS		500	/* data hello for a run not yet known */
#define HQ_LINGER_MS		5000	/* data EOF after the control EOF */
#define HQ_MAX_PENDING		(1u << 20)	/* reorder queue bound */
#define HQ_MAX_BREAKS		4096	/* data breaks ahead of the data */
/*
 * Bytes of names (trace-N/live/names lines, escaped) one trace may write:
 * maps past it are refused and counted.  A re-map to the name an id has
 * already writes nothing.
 */
#define HQ_NAMES_MAX		(16u << 20)
/* What a data connection may send before its run is known. */
#define HQ_DATA_WAIT_MAX	(1u << 20)
/* Bytes of marker text waiting in the reorder queue. */
#define HQ_PENDING_TEXT_MAX	(16u << 20)

struct hq_opts {
	const char *listen_host;
	unsigned int port;
	const char *outdir;
	const char *control_path;
	const char *http_host;	/* --http: the live viewer (NULL: none) */
	unsigned int http_port;
	bool start;		/* send start right after the configuration */
	bool start_suspended;	/* suspend, then start */
	unsigned int gap_ms;	/* wait this long for a missing sequence */
	/* Declare a missing sequence lost once this many wait (0: only
	 * HQ_MAX_PENDING, a gap). */
	unsigned int reorder_bound;
	bool udp;		/* --udp: data datagrams on the port number too */
	/* the bound for a trace whose data come in datagrams: reorder_bound
	 * if --reorder-bound was given, else HQ_UDP_REORDER_BOUND */
	unsigned int udp_reorder_bound;
	unsigned int live_flush_ms;	/* live copy flush period, 0: none */
	bool live_stamps;	/* --live-stamps: trace-N/live/stamps */
	/* Data connections are taken from the address of their run's
	 * control connection, from these (hq_addr_canon() forms), or, if
	 * data_from_any, from anywhere. */
	bool data_from_any;
	char data_from[8][48];
	unsigned int ndata_from;
	/* --http: the Host names served besides the bound one and loopback's */
	const char *http_names[8];
	unsigned int nhttp_names;
	bool http_any_host;
	unsigned int count;	/* exit after this many traces (0: never) */
	unsigned int timeout_s;	/* exit after this long (0: never) */
	int verbose;
	struct bfp_config config;	/* what agents are sent (run id aside) */
};

enum conn_kind {
	CONN_GREETING,		/* waiting for its first two bytes */
	CONN_CONTROL,
	CONN_DATA,
	CONN_CTL,		/* a local control client */
};

struct trace;

struct conn {
	int fd;
	enum conn_kind kind;
	struct bft_buf in, out;
	struct trace *trace;
	uint64_t since_ms;	/* accepted (greeting), or waiting (data) */
	int wait_run;		/* data hello for an unknown run: its id */
	bool close_after_flush;	/* an error was sent: close once written */
	bool dead;		/* to be freed by the loop */
	char peer[64];
	char addr[48];		/* the peer's address, hq_addr_canon()'s; "": none */
	uint64_t bytes_in, msgs_in;
};

/* The per-trace state is private to trace.c and route*.c. */
struct route;

struct trace {
	unsigned int index;	/* trace-<index> under the output directory */
	uint8_t run_id;
	uint8_t version;
	struct conn *control;
	struct conn **data;
	unsigned int ndata;
	unsigned int data_open;
	uint8_t last_mode;	/* of the last heartbeat, 0 if none */
	uint64_t last_hb_ms;
	bool warned_hb;
	bool shutting_down;	/* 'X' heartbeat or stop sent */
	/* our last pause/unpause was a pause: renewed at each 'P' heartbeat,
	 * since bfcollector ends a pause HQ stops renewing (its lease) */
	bool holds_pause;
	bool control_closed;
	uint64_t control_closed_ms;
	bool failed;
	char fail_msg[256];
	bool finished;
	/* ordering */
	uint32_t next_seq;
	struct pending *heap;
	uint32_t nheap, heap_cap;
	uint64_t stalled_since_ms;
	uint32_t *breaks;	/* data break sequences, sorted */
	uint32_t nbreaks, breaks_cap;
	/* counters for the summary */
	uint64_t heartbeats, classes[3], agent_errors, gaps, gap_missing;
	uint64_t late, breaks_seen, breaks_late, routed;
	uint64_t lost_bound, lost_missing;	/* at the reorder bound */
	uint64_t names_bytes, names_refused;	/* against HQ_NAMES_MAX */
	uint64_t pending_text;	/* marker bytes in the heap */
	uint64_t wire_bytes;	/* of the messages decoded for it */
	uint64_t start_wall_us;	/* the agent's hello, Unix time */
	char *agent_error;	/* the text of the agent's Error, NULs kept */
	size_t agent_error_len;
	struct route *route;
	struct route_hold *hold;	/* micro.c's */
	struct live *live;	/* NULL: no live copy */
	/* --udp (udp.c): the streams' packet windows, the end, the counts */
	struct udp_state *udp;
	bool udp_seen;		/* data came in datagrams: udp_reorder_bound */
	/* the control connection's address, kept past its close: datagrams
	 * still on their way are taken until the trace finishes */
	char agent_addr[48];
	uint32_t udp_end_seq;	/* DataEnd: the sequence after the last sent */
	bool udp_end_known;
	uint64_t udp_dgrams, udp_lost, udp_dup, udp_late, udp_malformed;
};

/* A sequenced message waiting for its turn. */
struct pending {
	uint32_t seq;
	uint32_t time;
	uint32_t method;
	uint32_t exception;
	uint16_t thread;
	uint16_t line;
	uint16_t us;		/* the sub-millisecond part of time (bftrace.us) */
	uint8_t id;
	bool thrown;
	bool noret;		/* an entry of an entries-only method (route.h) */
	char *key, *value;	/* MARKER */
};

struct hq {
	struct hq_opts o;
	int listen_fd;
	int ctl_fd;
	int udp_fd;		/* --udp, else -1 */
	uint64_t udp_foreign;	/* datagrams refused from no agent's address */
	struct conn **conns;
	unsigned int nconns, conns_cap;
	struct trace **traces;
	unsigned int ntraces, traces_cap;
	unsigned int next_index;
	bool indexed;		/* next_index follows the output directory's */
	unsigned int finished;
	unsigned int run_cursor;	/* the next run id to try */
	bool stop;
};

/* hq.c */
/* No log lines, no summary on stdout (tests, fuzzing). */
extern bool hq_log_quiet;
uint64_t hq_now_ms(void);
void hq_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* printf to the end of b (nothing on ENOMEM). */
void hq_bprintf(struct bft_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Free the connections marked dead. */
void hq_reap(struct hq *hq);

/*
 * duration.c: us in the live page's unit (µs, ms, s) into b (n bytes);
 * micro false: the trace has whole milliseconds, none smaller is made up.
 * Returns the columns it takes (µ is one).
 */
size_t hq_duration(char *b, size_t n, uint64_t us, bool micro);
/* The same at the end of b, right-aligned in width columns. */
void hq_bduration(struct bft_buf *b, uint64_t us, bool micro, int width);
/* Write out every trace still running, then free everything. */
void hq_free(struct hq *hq);

/* conn.c */
/*
 * The numeric address s in one form for comparing (an IPv4-mapped IPv6
 * address as IPv4) into out (48 bytes): 0, or -1 if s is no address.
 */
int hq_addr_canon(const char *s, char *out);
/* A non-blocking listening TCP socket on host:port, or -1 (logged). */
int hq_listen_on(const char *host, unsigned int port);
int hq_listen(struct hq *hq);
int hq_ctl_listen(struct hq *hq);
int hq_ctl_send(const char *path, const char *cmd);
void hq_accept(struct hq *hq);
void hq_ctl_accept(struct hq *hq);
struct conn *hq_conn_add(struct hq *hq, int fd, enum conn_kind kind);
/* Read what the socket has, then hq_conn_process(). */
void hq_conn_read(struct hq *hq, struct conn *c);
/*
 * The receive path without a socket: append n bytes to c's input and
 * process them as if read (eof: the peer closed after them).  A conn with
 * fd -1 keeps what HQ sends it in c->out for the caller to read.
 */
void hq_conn_feed(struct hq *hq, struct conn *c, const void *p, size_t n,
		  bool eof);
/* Greet, decode and act on the whole messages in c->in. */
void hq_conn_process(struct hq *hq, struct conn *c, bool eof);
void hq_conn_write(struct conn *c);
int hq_send(struct conn *c, unsigned int version, const struct bfp_msg *m);
void hq_send_error(struct conn *c, const char *text);
void hq_conn_close(struct hq *hq, struct conn *c);
void hq_greet_timeouts(struct hq *hq, uint64_t now);

/* udp.c */
/*
 * The default reorder bound with --udp: 4096 messages, 42 datagrams of
 * entries, about 3 ms of bfcollector's default pace.
 */
#define HQ_UDP_REORDER_BOUND	4096
/* Bind UDP where the TCP listener is: 0, or -1 (logged). */
int hq_udp_open(struct hq *hq);
/* Take the datagrams waiting (a bounded batch). */
void hq_udp_read(struct hq *hq);
/* One datagram from addr (hq_addr_canon()'s form), without a socket. */
void hq_udp_feed(struct hq *hq, const uint8_t *p, size_t n,
		 const char *addr);
/* The agent's DataEnd (control connection). */
void hq_udp_data_end(struct hq *hq, struct trace *t,
		     const struct bfp_msg *m);
/* The reorder bound of t (0: none but HQ_MAX_PENDING). */
unsigned int hq_reorder_bound(const struct hq_opts *o, const struct trace *t);
/* Whether sequence numbers the agent sent are still to come. */
bool hq_udp_waiting(const struct trace *t);
/* Count the datagrams never seen; free the windows. */
void hq_udp_finish(struct trace *t);

/* trace.c */
struct trace *hq_trace_new(struct hq *hq, struct conn *control,
			   uint8_t version);
struct trace *hq_trace_by_run(struct hq *hq, uint8_t run_id);
void hq_trace_add_data(struct hq *hq, struct trace *t, struct conn *c);
/* A whole message from the trace's control or a data connection. */
void hq_trace_control_msg(struct hq *hq, struct trace *t,
			  const struct bfp_msg *m);
void hq_trace_data_msg(struct hq *hq, struct trace *t, struct conn *c,
		       const struct bfp_msg *m);
/* Protocol violation by the agent: error message, trace ends. */
void hq_trace_fail(struct hq *hq, struct trace *t, struct conn *c,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void hq_trace_conn_closed(struct hq *hq, struct trace *t, struct conn *c);
/* Gaps, heartbeats, lingering: called from the loop. */
void hq_trace_tick(struct hq *hq, struct trace *t, uint64_t now);
/* Send a mode command (BFP_START ...) to one trace. */
int hq_trace_command(struct hq *hq, struct trace *t, uint8_t id);
void hq_trace_finish(struct hq *hq, struct trace *t);
void hq_trace_free(struct trace *t);

/* route*.c */
/*
 * How much of tree.txt's and calls.txt's text a trace's route keeps in
 * memory until the trace ends; past it, the route puts what it holds in a
 * spill file in the trace's directory (64 MiB; tests make it small).
 */
extern size_t route_hold_max;
/*
 * --full-names: tree.txt, summary.txt, folded.txt and flame.svg print
 * methods' whole signatures, not their display forms (bft_shortname).
 */
extern bool route_full_names;
struct route *route_new(const struct trace *t, const char *dir);
void route_free(struct route *r);
void route_map_thread(struct route *r, uint16_t thread, uint32_t time,
		      const char *name);
void route_map_method(struct route *r, uint32_t id, const char *sig);
/* Times have their microseconds (bftrace.us markers): durations show them. */
void route_set_micro(struct route *r);
/* Whether kind ('M', 'T', 'X') id is mapped to name (len bytes) already. */
bool route_has_name(struct route *r, char kind, uint32_t id,
		    const char *name, size_t len);
void route_map_exception(struct route *r, uint32_t id, const char *name);
void route_event(struct route *r, const struct pending *p);
/* sig without its object prefix and parameters, into b (n bytes). */
void route_label(const char *sig, char *b, size_t n);
/* A "bftrace.noret" marker's value: the method id it says has no exits. */
void route_declare_noret(struct route *r, const char *value);
/* Whether method id was declared entries-only ("bftrace.noret"). */
bool route_noret(struct route *r, uint32_t id);

/*
 * flame.c: folded.txt (path folded) drawn into svg; 0 or -errno.  A box's
 * tooltip names what full_of(name, arg) writes into b (the signatures of
 * name, a display form), or name itself if full_of is NULL or writes
 * nothing.
 */
typedef void hq_flame_full_fn(const char *name, struct bft_buf *b, void *arg);
int hq_write_flame(const char *folded, const char *svg, const char *title,
		   hq_flame_full_fn *full_of, void *arg);

/* Every thread's call stack is void: cause "data break" or "gap". */
void route_void(struct route *r, const char *cause);
/* The same for one thread only (a replayed void line). */
void route_void_thread(struct route *r, uint16_t thread, const char *cause);
/* Write every output file; the summary also goes to f if not NULL. */
int route_finish(struct route *r, const struct trace *t, FILE *f);

/* micro.c: routing with bftrace.us markers' microseconds */
struct route_hold;
/*
 * A bftrace.us marker's value "<n> <d>,<d>,...": the n sub-millisecond
 * parts into *d (malloc'ed, caller frees): 0, -EINVAL or -ENOMEM.
 */
int hq_micro_parse(const char *v, uint16_t **d, uint32_t *n);
/* route_event(), or held until a marker gives p its microseconds. */
void micro_route(struct trace *t, struct pending *p);
/* route_void(), in line with what is held. */
void micro_void(struct trace *t, const char *cause);
/* A bftrace.us marker: what is held gets its microseconds and goes. */
void micro_marker(struct trace *t, const struct pending *p);
/* Route what is held (the trace ends). */
void micro_flush(struct trace *t);
void micro_free(struct trace *t);

/* live_write.c: see docs/live-format.md */
struct live;
struct live *live_open(const struct hq *hq, const struct trace *t,
		       const char *trace_dir);
void live_name(struct live *l, char kind, uint32_t id, const char *name,
	       size_t len);
void live_event(struct live *l, const struct pending *p);
/* A "bftrace.us" marker: the sub-ms times of the messages before it. */
void live_micro(struct live *l, const struct pending *p);
/* The stacks are void before sequence next: cause "break", "gap", "lost". */
void live_void(struct live *l, const char *cause, uint32_t first,
	       uint32_t count, uint32_t next);
/* Flush if the period is over (or force); final: the trace has ended. */
void live_tick(struct live *l, const struct trace *t, uint64_t now_ms,
	       bool force, bool final);
/* Milliseconds until live_tick() has work, -1: none (l NULL or done). */
int live_wait_ms(const struct live *l, uint64_t now_ms);
void live_close(struct live *l);

/*
 * replay.c: bfhq --replay DIR (trace-N or its live/), the outputs into
 * outdir (NULL: the trace's replay/).
 */
int hq_replay(const char *dir, const char *outdir);

#endif /* BFHQ_H */
