/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The route of a trace, private to the files that make it:
 *
 *   route.c         tables of names, methods and threads; each event sent
 *                   where it goes; holding and spilling; setup
 *   route_tree.c    frames entered and left: tree.txt's and calls.txt's
 *                   text, the folded-stack trie, throws
 *   route_chrome.c  trace.json's, trace.pftrace's and
 *                   trace.speedscope.json's events
 *   route_noret.c   entries-only methods, grouped into instants
 *   route_out.c     the output files, written when the trace ends
 *
 * Ordered events become call trees.  Each thread id has a shadow stack;
 * an entry pushes, an exit pops the frame it names.  From that come:
 *
 *   tree.txt     per thread, uftrace-replay style: a leaf call on one line
 *                with its duration, an inner call opened with "{" and closed
 *                with its duration; breaks and gaps are marked where they
 *                cut the stacks; a throw is a comment in its frame, a frame
 *                it left closes with "unwound"; a marker of the thread
 *                ("bftrace.at") a "* key value @ time" line in its frame
 *   trace.json   Chrome trace events: B/E per call, M events naming
 *                threads; every B gets its E (frames cut by a break or left
 *                open at the end are closed there, frames an exception left
 *                at the bubble), so it loads in Perfetto; an instant event
 *                per throw, per group of an entries-only method's calls,
 *                and per marker (global, or its thread's: "s":"t")
 *   trace.pftrace  the same as Perfetto's protobuf (pftrace.c), with an
 *                instant for each data break too
 *   trace.speedscope.json  the calls as speedscope's evented profiles, a
 *                profile per thread (speedscope.c), no instants
 *   folded.txt   "thread;a;b;c <self us>" lines for flamegraph.pl
 *   flame.svg    folded.txt drawn (flame.c)
 *   summary.txt  calls, threads, methods, losses, data breaks, top methods
 *   calls.txt    one line per thread: its events in a canonical form
 *                ("e<id>" entry, "x<id>" exit, "x?" exit while the stack is
 *                empty: its frame was never seen, entered before the trace
 *                began or cut by a break or gap; "x!" exit naming no frame
 *                of a stack that is not empty; "|" stacks void; "!<type>" a
 *                throw; "u<id>" a frame an exception left, "u?" and "u!"
 *                as "x?" and "x!"; "n<id>" an entry of an entries-only
 *                method; "m<key>" a marker of the thread, its key escaped
 *                as the live copy's text with ' ' and ':' as \x20 and
 *                \x3a too, so that a token holds neither a space nor the
 *                colon that ends the thread's name), for comparing trees
 *                exactly
 *   methods.txt  "<id> <calls> <signature>" per method, by id: the key to
 *                calls.txt
 *   exceptions.txt  "<type> <throws> <name>" per exception type, by id:
 *                the key to "!<type>"
 *
 * Times are the protocol's: milliseconds since the agent's hello, with
 * their microseconds if bftrace.us markers gave them (micro.c); durations
 * print them then, and whole milliseconds otherwise (duration.c).
 */
#ifndef BFHQ_ROUTE_H
#define BFHQ_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "hq.h"
#include "pftrace.h"
#include "speedscope.h"
#include "spill.h"

#define NO_NODE UINT32_MAX

/*
 * A name, counted: a frame keeps the signature its B event named while the
 * method table moves on to a newer one, and the last of them frees it.
 * s + show is what the text outputs print: s itself (show 0), or the
 * display form (bft_shortname) stored after it, made once when the name
 * is mapped.
 */
struct sig {
	uint64_t refs;
	size_t show;
	char s[];
};

struct frame {
	uint32_t method;
	uint64_t enter;		/* us */
	uint64_t child_us;
	uint32_t node;
	/* The signature its B event named (NULL: "#id"), so that its E
	 * names the same even if the map came, or changed, in between. */
	struct sig *bname;
};

struct rthread {
	uint16_t id;
	char *name;
	uint32_t renames;
	uint32_t pid, tid;	/* for Chrome: from "(pid/tid)" in the name */
	struct frame *stack;
	uint32_t depth, cap, max_depth;
	bool leaf_pending;	/* the top frame is printed once we know */
	bool seen;		/* has had an event */
	bool named_in_json;
	bool mapped;		/* MapThreadName received */
	uint64_t last_time;	/* us */
	uint32_t root;		/* folded-stack trie root */
	uint64_t calls;
	struct bft_buf text, canon;
	/* what of text and canon went to the spill file, and how much of
	 * them the route counts as held in memory */
	struct spill_list text_spilled, canon_spilled;
	size_t held;
	/* entries of entries-only methods, counted per method */
	struct method *noret;
	uint32_t ncap, ncount;
};

struct method {
	uint32_t id;
	bool used_slot;
	bool mapped;
	bool noret;		/* declared entries-only: no frames, counted */
	struct sig *sig;
	uint64_t calls, total_us, self_us;
	/* in a thread's table of entries-only methods: the calls not yet in
	 * an instant of trace.json, from first_us to last_us */
	uint64_t group, first_us, last_us;
	uint32_t label_len;
};

struct node {
	uint32_t parent, method, first_child, next_sibling;
	uint32_t depth;		/* frames from the thread's root */
	uint64_t self_us, calls;
};

/*
 * A stack is as deep as the agent makes it.  Past these depths the text
 * outputs stop growing per line, or the output would grow with the square
 * of the input: tree.txt indents no further (the depth is printed
 * instead), and folded.txt leaves deeper paths out (counted).
 */
#define TREE_MAX_INDENT		64
/*
 * trace.json's instants for entries of entries-only methods.  One per
 * entry would be 90 bytes of JSON for 15 on the wire, so a thread's entries
 * of one method make one instant with their count: those within this many
 * microseconds of its first, and more while trace.json, with an instant
 * for each group still open, would outgrow the wire bytes of the entries.
 * The timeline stays whole from first call to last, and trace.json no
 * bigger than the trace.
 */
#define CHROME_GROUP_US		1000
#define CHROME_HEAD		"{\"displayTimeUnit\":\"ms\",\"traceEvents\":["
/* an upper bound of an instant's JSON, its name aside */
#define CHROME_INSTANT_LEN	128
#define FOLDED_MAX_DEPTH	1024
#define THREAD_PAGE		256
#define THREAD_PAGES		(65536 / THREAD_PAGE)

struct route {
	char dir[4096];
	FILE *chrome;
	bool chrome_first;
	uint64_t chrome_bytes;	/* written to it so far */
	struct pftrace *pft;
	struct speedscope *ssc;
	/* tree.txt's and calls.txt's text held in memory, in all threads;
	 * past route_hold_max it goes to the spill file */
	size_t held;
	struct spill spill;
	/*
	 * Thread ids are 16 bits; a page of them is allocated with its first
	 * thread, so a route costs a few KiB, not a table of every id.
	 */
	struct rthread **thread_pages[THREAD_PAGES];
	uint16_t *order;	/* thread ids in order of appearance */
	uint32_t nthreads, order_cap;
	struct method *methods;	/* open addressing on id */
	uint32_t mcap, mcount;
	struct method *exceptions;
	uint32_t ecap, ecount;
	struct node *nodes;
	uint32_t nnodes, ncap;
	uint64_t last_time;	/* us */
	uint64_t t0;		/* the first event's time: trace.json's 0 */
	bool have_t0;
	bool micro;		/* times have their microseconds */
	uint32_t pid_default;
	uint64_t noret_calls, noret_methods, instants;
	uint64_t group_cost;	/* the instants of the groups not yet written */
	uint64_t calls, exits, orphans, mismatched, voids, voided_frames;
	uint64_t exceptions_seen, markers, lost, unclosed;
	/* calls bfcollector's --min-time and --caller left out */
	uint64_t filtered_min_time, filtered_caller;
	uint64_t unwound, unmapped_exception_uses;
	/* Events routed before the map that names their method or thread:
	 * the agent broke "map before first use". */
	uint64_t unmapped_method_uses, unnamed_thread_uses;
	uint64_t folded_cut;	/* paths deeper than FOLDED_MAX_DEPTH */
	/*
	 * A Marker carries no thread: bfcollector's "bftrace.at" marker names
	 * the thread of the one numbered right after it (a probe hit).  Held
	 * only until the next sequenced message, so that nothing else can
	 * take it.
	 */
	bool at_set;
	uint16_t at_thread;
	uint32_t at_seq;
};

/* route.c */
struct sig *sig_get(struct sig *g);
void sig_put(struct sig *g);
/* The entry for id in an open-addressed table, made if create. */
struct method *table_get(struct method **tab, uint32_t *cap,
			 uint32_t *count, uint32_t id, bool create);
struct method *method_get(struct route *r, uint32_t id, bool create);
/* A method's signature, "#<id>" (in tmp) if it has none. */
const char *method_name(struct route *r, uint32_t id, char *tmp, size_t n);
/* What the text outputs print for a method: its display form, unless
 * route_full_names. */
const char *method_show(struct route *r, uint32_t id, char *tmp, size_t n);
/* An exception type's name, "#<id>" (in tmp) if it was never mapped. */
const char *exception_name(struct route *r, uint32_t id, char *tmp,
			   size_t n);
struct rthread *thread_at(const struct route *r, uint16_t id);

/* route_chrome.c */
/* Bytes to trace.json (arg: the route), counted. */
int chrome_put(const char *p, size_t n, void *arg);
/* One event to trace.json; ev is released. */
void chrome_event(struct route *r, json_t *ev);
/* trace.json's M event, trace.pftrace's track and the speedscope
 * profile's name for th. */
void chrome_name(struct route *r, struct rthread *th);
json_int_t chrome_ts(const struct route *r, uint64_t us);
uint64_t pft_ns(const struct route *r, uint64_t us);
/* A call's B or E event (ph). */
void chrome_slice(struct route *r, struct rthread *th, const char *ph,
		  const char *name, uint64_t us);

/* route_tree.c */
void frame_enter(struct route *r, struct rthread *th, uint32_t method,
		 uint64_t time);
/* Pop the top frame at time; note says why, if not a normal exit. */
void frame_leave(struct route *r, struct rthread *th, uint64_t time,
		 const char *note);
/* An exit ('x') or a bubble ('u', left by exception exc) of method. */
void frame_exit(struct route *r, struct rthread *th, uint32_t method,
		uint64_t time, const char *note, char tok, const char *exc);
/* The name of exception id for a note; counts an unmapped use. */
const char *exception_note(struct route *r, uint32_t id, char *tmp,
			   size_t n);
void thread_throw(struct route *r, struct rthread *th,
		  const struct pending *p, uint64_t time);
/* A marker of th ("bftrace.at"): a line in its frame, an instant on its
 * track. */
void thread_marker(struct route *r, struct rthread *th,
		   const struct pending *p, uint64_t time);

/* route_noret.c */
/* An instant of trace.json for the calls of c's group, if any. */
void chrome_group(struct route *r, struct rthread *th, struct method *c);
/* An entry of entries-only method m: counted, no frame. */
void noret_enter(struct route *r, struct rthread *th, struct method *m,
		 uint64_t time);

#endif /* BFHQ_ROUTE_H */
