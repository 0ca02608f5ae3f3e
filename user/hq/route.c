// SPDX-License-Identifier: GPL-2.0
/*
 * Ordered events become call trees.  Each thread id has a shadow stack;
 * an entry pushes, an exit pops the frame it names.  From that come:
 *
 *   tree.txt     per thread, uftrace-replay style: a leaf call on one line
 *                with its duration, an inner call opened with "{" and closed
 *                with its duration; breaks and gaps are marked where they
 *                cut the stacks; a throw is a comment in its frame, a frame
 *                it left closes with "unwound"
 *   trace.json   Chrome trace events: B/E per call, M events naming
 *                threads; every B gets its E (frames cut by a break or left
 *                open at the end are closed there, frames an exception left
 *                at the bubble), so it loads in Perfetto; an instant event
 *                per throw, and per group of an entries-only method's calls
 *   trace.pftrace  the same as Perfetto's protobuf (pftrace.c), with an
 *                instant for each data break too
 *   folded.txt   "thread;a;b;c <self us>" lines for flamegraph.pl
 *   flame.svg    folded.txt drawn (flame.c)
 *   summary.txt  calls, threads, methods, losses, data breaks, top methods
 *   calls.txt    one line per thread: its events in a canonical form
 *                ("e<id>" entry, "x<id>" exit, "x?" exit while the stack is
 *                empty: its frame was never seen, entered before the trace
 *                began or cut by a break or gap; "x!" exit naming no frame
 *                of a stack that is not empty; "|" stacks void; "!<type>" a
 *                throw; "u<id>" a frame an exception left, "u?" and "u!"
 *                as "x?" and "x!"), for comparing trees exactly
 *   methods.txt  "<id> <calls> <signature>" per method, by id: the key to
 *                calls.txt
 *   exceptions.txt  "<type> <throws> <name>" per exception type, by id:
 *                the key to "!<type>"
 *
 * Times are the protocol's: milliseconds since the agent's hello.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hq.h"
#include "pftrace.h"
#include "spill.h"

#define NO_NODE UINT32_MAX

/*
 * A name, counted: a frame keeps the signature its B event named while the
 * method table moves on to a newer one, and the last of them frees it.
 */
struct sig {
	uint64_t refs;
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
	uint32_t pid_default;
	uint64_t noret_calls, noret_methods, instants;
	uint64_t group_cost;	/* the instants of the groups not yet written */
	uint64_t calls, exits, orphans, mismatched, voids, voided_frames;
	uint64_t exceptions_seen, markers, lost, unclosed;
	uint64_t unwound, unmapped_exception_uses;
	/* Events routed before the map that names their method or thread:
	 * the agent broke "map before first use". */
	uint64_t unmapped_method_uses, unnamed_thread_uses;
	uint64_t folded_cut;	/* paths deeper than FOLDED_MAX_DEPTH */
};

static struct sig *sig_new(const char *s)
{
	size_t n = strlen(s) + 1;
	struct sig *g = malloc(sizeof(*g) + n);

	if (!g)
		return NULL;
	g->refs = 1;
	memcpy(g->s, s, n);
	return g;
}

static struct sig *sig_get(struct sig *g)
{
	if (g)
		g->refs++;
	return g;
}

static void sig_put(struct sig *g)
{
	if (g && !--g->refs)
		free(g);
}

/* ---- id tables ---- */

static struct method *table_get(struct method **tab, uint32_t *cap,
				uint32_t *count, uint32_t id, bool create)
{
	uint32_t i;

	if (create && (*count + 1) * 2 > *cap) {
		uint32_t ncap = *cap ? 2 * *cap : 256, k;
		struct method *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (k = 0; k < *cap; k++) {
			struct method *m = &(*tab)[k];

			if (!m->used_slot)
				continue;
			for (i = (m->id * 2654435761u) & (ncap - 1);
			     n[i].used_slot; i = (i + 1) & (ncap - 1))
				;
			n[i] = *m;
		}
		free(*tab);
		*tab = n;
		*cap = ncap;
	}
	if (!*cap)
		return NULL;
	for (i = (id * 2654435761u) & (*cap - 1); (*tab)[i].used_slot;
	     i = (i + 1) & (*cap - 1))
		if ((*tab)[i].id == id)
			return &(*tab)[i];
	if (!create)
		return NULL;
	(*tab)[i].used_slot = true;
	(*tab)[i].id = id;
	(*count)++;
	return &(*tab)[i];
}

static struct method *method_get(struct route *r, uint32_t id, bool create)
{
	return table_get(&r->methods, &r->mcap, &r->mcount, id, create);
}

static const char *method_name(struct route *r, uint32_t id, char *tmp,
			       size_t n)
{
	struct method *m = method_get(r, id, false);

	if (m && m->sig)
		return m->sig->s;
	snprintf(tmp, n, "#%" PRIu32, id);
	return tmp;
}

/* ---- the folded-stack trie ---- */

static uint32_t node_child(struct route *r, uint32_t parent, uint32_t method)
{
	uint32_t c = parent == NO_NODE ? NO_NODE : r->nodes[parent].first_child;

	for (; c != NO_NODE; c = r->nodes[c].next_sibling)
		if (r->nodes[c].method == method)
			return c;
	if (r->nnodes == r->ncap) {
		uint32_t cap = r->ncap ? 2 * r->ncap : 1024;
		struct node *n = realloc(r->nodes, cap * sizeof(*n));

		if (!n)
			return NO_NODE;
		r->nodes = n;
		r->ncap = cap;
	}
	c = r->nnodes++;
	r->nodes[c] = (struct node){ .parent = parent, .method = method,
				     .first_child = NO_NODE,
				     .next_sibling = NO_NODE,
				     .depth = parent == NO_NODE ? 0 :
					      r->nodes[parent].depth + 1 };
	if (parent != NO_NODE) {
		r->nodes[c].next_sibling = r->nodes[parent].first_child;
		r->nodes[parent].first_child = c;
	}
	return c;
}

/* ---- Chrome trace events ---- */

static int chrome_put(const char *p, size_t n, void *arg)
{
	struct route *r = arg;

	r->chrome_bytes += n;
	return fwrite(p, 1, n, r->chrome) == n ? 0 : -1;
}

static void chrome_event(struct route *r, json_t *ev)
{
	if (!ev)
		return;
	if (r->chrome) {
		chrome_put(r->chrome_first ? "\n" : ",\n",
			   r->chrome_first ? 1 : 2, r);
		json_dump_callback(ev, chrome_put, r, JSON_COMPACT);
		r->chrome_first = false;
	}
	json_decref(ev);
}

static void chrome_name(struct route *r, struct rthread *th)
{
	chrome_event(r, json_pack("{s:s,s:s,s:I,s:I,s:{s:s}}", "name",
				  "thread_name", "ph", "M",
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid, "args", "name",
				  th->name));
	pft_thread(r->pft, th->id, th->pid, th->tid, th->name);
	th->named_in_json = true;
}

/* trace.json's time of us: from the first event, so no empty lead-in. */
static json_int_t chrome_ts(const struct route *r, uint64_t us)
{
	return (json_int_t)(us > r->t0 ? us - r->t0 : 0);
}

/* trace.pftrace's: nanoseconds. */
static uint64_t pft_ns(const struct route *r, uint64_t us)
{
	return (uint64_t)chrome_ts(r, us) * 1000;
}

static void chrome_slice(struct route *r, struct rthread *th, const char *ph,
			 const char *name, uint64_t us)
{
	if (!th->named_in_json)
		chrome_name(r, th);
	chrome_event(r, json_pack("{s:s,s:s,s:I,s:I,s:I}", "name", name,
				  "ph", ph, "ts", chrome_ts(r, us),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid));
	if (*ph == 'B')
		pft_begin(r->pft, th->id, pft_ns(r, us), name);
	else
		pft_end(r->pft, th->id, pft_ns(r, us));
}

/* ---- threads ---- */

static void parse_ids(struct rthread *th, uint32_t pid_default)
{
	const char *open = th->name ? strrchr(th->name, '(') : NULL;
	unsigned int pid, tid;

	th->pid = pid_default;
	th->tid = 1000000u + th->id;	/* never a real tid */
	if (open && sscanf(open, "(%u/%u)", &pid, &tid) == 2) {
		th->pid = pid;
		th->tid = tid;
	}
}

static struct rthread *thread_at(const struct route *r, uint16_t id)
{
	struct rthread **page = r->thread_pages[id / THREAD_PAGE];

	return page ? page[id % THREAD_PAGE] : NULL;
}

/* Room for thread @id in its page and in the order: 0, or -ENOMEM. */
static int thread_room(struct route *r, uint16_t id)
{
	struct rthread ***page = &r->thread_pages[id / THREAD_PAGE];

	if (!*page) {
		*page = calloc(THREAD_PAGE, sizeof(**page));
		if (!*page)
			return -ENOMEM;
	}
	if (r->nthreads == r->order_cap) {
		uint32_t cap = r->order_cap ? 2 * r->order_cap : 16;
		uint16_t *v = realloc(r->order, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->order = v;
		r->order_cap = cap;
	}
	return 0;
}

static struct rthread *thread_get(struct route *r, uint16_t id)
{
	struct rthread *th = thread_at(r, id);
	char name[32];

	if (th)
		return th;
	if (thread_room(r, id))
		return NULL;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->id = id;
	snprintf(name, sizeof(name), "thread %u", id);
	th->name = strdup(name);
	th->root = NO_NODE;
	parse_ids(th, r->pid_default);
	r->thread_pages[id / THREAD_PAGE][id % THREAD_PAGE] = th;
	r->order[r->nthreads++] = id;
	return th;
}

void route_map_thread(struct route *r, uint16_t thread, uint32_t time,
		      const char *name)
{
	bool fresh = !thread_at(r, thread);
	struct rthread *th = thread_get(r, thread);

	(void)time;
	if (!th)
		return;
	th->mapped = true;
	if (th->name && !strcmp(th->name, name) && !fresh)
		return;
	if (!fresh)
		th->renames++;
	free(th->name);
	th->name = strdup(name);
	if (!th->seen)
		parse_ids(th, r->pid_default);	/* keep Chrome ids stable */
	if (th->named_in_json || fresh)
		chrome_name(r, th);
}

bool route_has_name(struct route *r, char kind, uint32_t id,
		    const char *name, size_t len)
{
	const struct rthread *th;
	struct method *m;

	if (strlen(name) != len)
		return false;	/* a NUL inside: written out, not kept */
	switch (kind) {
	case 'T':
		th = id <= UINT16_MAX ? thread_at(r, (uint16_t)id) : NULL;
		return th && th->mapped && th->name && !strcmp(th->name, name);
	case 'M':
		m = method_get(r, id, false);
		break;
	default:
		m = table_get(&r->exceptions, &r->ecap, &r->ecount, id, false);
		break;
	}
	return m && m->mapped && m->sig && !strcmp(m->sig->s, name);
}

/*
 * One name per id: the one replaced is freed once no open frame names it
 * (an agent may re-map an id as often as it likes).
 */
static void set_sig(struct method *m, const char *name)
{
	struct sig *g;

	m->mapped = true;
	if (m->sig && !strcmp(m->sig->s, name))
		return;
	g = sig_new(name);
	if (!g)
		return;
	sig_put(m->sig);
	m->sig = g;
}

void route_map_method(struct route *r, uint32_t id, const char *sig)
{
	struct method *m = method_get(r, id, true);

	if (m)
		set_sig(m, sig);
}

void route_map_exception(struct route *r, uint32_t id, const char *name)
{
	struct method *m = table_get(&r->exceptions, &r->ecap, &r->ecount, id,
				     true);

	if (m)
		set_sig(m, name);
}

/* An exception type's name, "#<id>" if it was never mapped. */
static const char *exception_name(struct route *r, uint32_t id, char *tmp,
				  size_t n)
{
	struct method *e = table_get(&r->exceptions, &r->ecap, &r->ecount, id,
				     false);

	if (e && e->sig)
		return e->sig->s;
	snprintf(tmp, n, "#%" PRIu32, id);
	return tmp;
}

/* ---- entering and leaving frames ---- */

/*
 * What tree.txt writes after a name to show a call: "()", unless the
 * signature has its parameters already (a demangled C++ name, "f(int)" or
 * "g() const").
 */
static const char *call_parens(const char *name)
{
	return strchr(name, '(') ? "" : "()";
}

/* tree.txt's duration column: milliseconds with their microseconds. */
static void duration(struct bft_buf *b, uint64_t us)
{
	char ms[32];

	snprintf(ms, sizeof(ms), "%" PRIu64 ".%03u", us / 1000,
		 (unsigned int)(us % 1000));
	hq_bprintf(b, "%7s ms | ", ms);
}

static void indent(struct bft_buf *b, uint32_t depth)
{
	if (depth > TREE_MAX_INDENT)
		hq_bprintf(b, "%*s[%" PRIu32 "] ", 2 * TREE_MAX_INDENT, "", depth);
	else
		hq_bprintf(b, "%*s", (int)(2 * depth), "");
}

/*
 * The top frame turned out not to be a leaf, or ends with a note: print its
 * opening line.  The pending frame must still be on the stack (leave()
 * calls this before its pop); an empty stack has nothing to name.
 */
static void flush_leaf(struct route *r, struct rthread *th)
{
	char tmp[24];
	const char *name;

	if (!th->leaf_pending)
		return;
	th->leaf_pending = false;
	if (!th->depth)
		return;
	hq_bprintf(&th->text, "%10s | ", "");
	indent(&th->text, th->depth - 1);
	name = method_name(r, th->stack[th->depth - 1].method, tmp,
			   sizeof(tmp));
	hq_bprintf(&th->text, "%s%s {\n", name, call_parens(name));
}

static void enter(struct route *r, struct rthread *th, uint32_t method,
		  uint64_t time)
{
	struct frame *f;
	struct method *m = method_get(r, method, true);
	char tmp[24];

	flush_leaf(r, th);
	if (th->depth == th->cap) {
		uint32_t cap = th->cap ? 2 * th->cap : 64;
		struct frame *s = realloc(th->stack, cap * sizeof(*s));

		if (!s)
			return;
		th->stack = s;
		th->cap = cap;
	}
	if (th->root == NO_NODE)
		th->root = node_child(r, NO_NODE, UINT32_MAX - th->id);
	f = &th->stack[th->depth++];
	f->method = method;
	f->enter = time;
	f->child_us = 0;
	f->bname = m ? sig_get(m->sig) : NULL;
	f->node = node_child(r, th->depth > 1 ? th->stack[th->depth - 2].node :
						th->root, method);
	if (f->node != NO_NODE)
		r->nodes[f->node].calls++;
	if (th->depth > th->max_depth)
		th->max_depth = th->depth;
	th->leaf_pending = true;
	th->calls++;
	r->calls++;
	if (m)
		m->calls++;
	chrome_slice(r, th, "B", method_name(r, method, tmp, sizeof(tmp)),
		     time);
}

/*
 * Pop the top frame at time; note says why, if not a normal exit.  exc, if
 * not NULL, is the exception that left it: its E event names it.
 */
static void leave_exc(struct route *r, struct rthread *th, uint64_t time,
		      const char *note, const char *exc)
{
	struct frame f;
	struct method *m;
	uint64_t dur, self;
	char tmp[24];
	const char *name;

	/* A leaf cut by a break, a gap, a throw or the end is printed open
	 * and closed with the note: its opening line goes out while it is
	 * still the top frame. */
	if (note)
		flush_leaf(r, th);
	f = th->stack[--th->depth];
	m = method_get(r, f.method, false);
	dur = time >= f.enter ? time - f.enter : 0;
	self = dur >= f.child_us ? dur - f.child_us : 0;
	name = method_name(r, f.method, tmp, sizeof(tmp));
	duration(&th->text, dur);
	indent(&th->text, th->depth);
	if (th->leaf_pending) {
		hq_bprintf(&th->text, "%s%s;\n", name, call_parens(name));
	} else {
		hq_bprintf(&th->text, "} /* %s%s%s */\n", name, note ? ": " : "",
			note ? note : "");
	}
	th->leaf_pending = false;
	if (th->depth)
		th->stack[th->depth - 1].child_us += dur;
	if (m) {
		m->total_us += dur;
		m->self_us += self;
	}
	if (f.node != NO_NODE)
		r->nodes[f.node].self_us += self;
	if (f.bname) {
		name = f.bname->s;
	} else {
		snprintf(tmp, sizeof(tmp), "#%" PRIu32, f.method);
		name = tmp;
	}
	if (!exc) {
		chrome_slice(r, th, "E", name, time);
	} else {
		if (!th->named_in_json)
			chrome_name(r, th);
		chrome_event(r, json_pack("{s:s,s:s,s:I,s:I,s:I,s:{s:s}}",
					  "name", name, "ph", "E",
					  "ts", chrome_ts(r, time),
					  "pid", (json_int_t)th->pid,
					  "tid", (json_int_t)th->tid,
					  "args", "unwound by", exc));
		pft_end(r->pft, th->id, pft_ns(r, time));
	}
	sig_put(f.bname);
}

static void leave(struct route *r, struct rthread *th, uint64_t time,
		  const char *note)
{
	leave_exc(r, th, time, note, NULL);
}

/*
 * An exit ('x'), or a bubble ('u': the frame was left by exception exc),
 * naming method.
 */
static void do_exit(struct route *r, struct rthread *th, uint32_t method,
		    uint64_t time, const char *note, char tok, const char *exc)
{
	uint32_t k;

	if (!th->depth) {
		/* The frame it closes was never seen (entered before the
		 * trace began, or cut by a break or gap): "x?", even as a
		 * thread's first event. */
		r->orphans++;
		hq_bprintf(&th->canon, " %c?", tok);
		return;
	}
	for (k = th->depth; k-- > 0;)
		if (th->stack[k].method == method)
			break;
	if (k == UINT32_MAX) {
		r->mismatched++;
		hq_bprintf(&th->canon, " %c!", tok);
		return;
	}
	while (th->depth > k + 1) {
		r->mismatched++;
		leave(r, th, time, "no exit seen");
	}
	if (exc)
		r->unwound++;
	else
		r->exits++;
	hq_bprintf(&th->canon, " %c%" PRIu32, tok, method);
	leave_exc(r, th, time, note, exc);
}

/* The name of exception id for a note; counts an unmapped use. */
static const char *exception_note(struct route *r, uint32_t id, char *tmp,
				  size_t n)
{
	struct method *e = table_get(&r->exceptions, &r->ecap, &r->ecount, id,
				     false);

	r->unmapped_exception_uses += !e || !e->mapped;
	return exception_name(r, id, tmp, n);
}

/*
 * A throw from the thread's top frame: a comment in that frame (which is
 * then no leaf), an instant event in trace.json.
 */
static void throw(struct route *r, struct rthread *th,
		  const struct pending *p, uint64_t time)
{
	struct method *e = table_get(&r->exceptions, &r->ecap, &r->ecount,
				     p->exception, true);
	char tmp[24], etmp[24], pname[300];
	const char *exc = exception_note(r, p->exception, etmp, sizeof(etmp));
	const char *in = method_name(r, p->method, tmp, sizeof(tmp));

	r->exceptions_seen++;
	if (e)
		e->calls++;
	flush_leaf(r, th);
	hq_bprintf(&th->canon, " !%" PRIu32, p->exception);
	hq_bprintf(&th->text, "%10s | ", "");
	indent(&th->text, th->depth);
	hq_bprintf(&th->text, "/* throw %s", exc);
	/* the frame that throws is the top one, unless the agent says not */
	if (!th->depth || th->stack[th->depth - 1].method != p->method)
		hq_bprintf(&th->text, " in %s", in);
	if (p->line)
		hq_bprintf(&th->text, ", line %u", p->line);
	hq_bprintf(&th->text, " */\n");
	if (!th->named_in_json)
		chrome_name(r, th);
	chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:{s:s,s:s}}",
				  "name", "throw", "ph", "i", "s", "t",
				  "ts", chrome_ts(r, time),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid, "args",
				  "exception", exc, "method", in));
	snprintf(pname, sizeof(pname), "throw %s", exc);
	pft_instant(r->pft, th->id, pft_ns(r, time), pname, 1);
}

void route_declare_noret(struct route *r, const char *value)
{
	struct method *m;
	unsigned long long id;
	char *end;

	errno = 0;
	id = strtoull(value, &end, 10);
	if (end == value || *end || errno || id > UINT32_MAX)
		return;
	m = method_get(r, (uint32_t)id, true);
	if (m && !m->noret) {
		m->noret = true;
		r->noret_methods++;
	}
}

bool route_noret(struct route *r, uint32_t id)
{
	struct method *m = method_get(r, id, false);

	return m && m->noret;
}

/*
 * A method's short label into b: no "object!" prefix, no parameter list
 * ("libqpdf.so.29!Pipeline::getNext(bool)" is "Pipeline::getNext"), for
 * trace.json's instants, which are many, and the flame graph's boxes.
 */
void route_label(const char *sig, char *b, size_t n)
{
	const char *bang = strchr(sig, '!'), *s = bang ? bang + 1 : sig, *c;
	int depth = 0;

	for (c = s; *c; c++) {
		if (*c == '<')
			depth++;
		else if (*c == '>' && depth)
			depth--;
		else if (*c == '(' && !depth && c > s &&
			 strncmp(s, "operator", 8))
			break;
	}
	snprintf(b, n, "%.*s", (int)(c - s), s);
}

/* An instant of trace.json for the calls of c's group. */
static void chrome_group(struct route *r, struct rthread *th, struct method *c)
{
	char tmp[24], label[256];

	if (!c->group)
		return;
	route_label(method_name(r, c->id, tmp, sizeof(tmp)), label,
		    sizeof(label));
	chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:{s:I,s:I}}",
				  "name", label, "ph", "i", "s", "t", "ts",
				  chrome_ts(r, c->first_us),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid, "args",
				  "calls", (json_int_t)c->group, "span_us",
				  (json_int_t)(c->last_us - c->first_us)));
	pft_instant(r->pft, th->id, pft_ns(r, c->first_us), label, c->group);
	r->instants++;
	r->group_cost -= c->label_len + CHROME_INSTANT_LEN;
	c->group = 0;
}

/*
 * An entry of an entries-only method: no frame (its exit will never
 * come), a count per thread for tree.txt, a call in trace.json's instant.
 */
static void instant(struct route *r, struct rthread *th, struct method *m,
		    uint64_t time)
{
	struct method *c = table_get(&th->noret, &th->ncap, &th->ncount,
				     m->id, true);
	uint64_t cost;

	hq_bprintf(&th->canon, " n%" PRIu32, m->id);
	m->calls++;
	th->calls++;
	r->calls++;
	r->noret_calls++;
	if (!c)
		return;		/* no memory: counted in the totals only */
	c->calls++;
	if (!th->named_in_json)
		chrome_name(r, th);
	if (!c->label_len) {
		char tmp[24], label[256];

		route_label(method_name(r, m->id, tmp, sizeof(tmp)), label,
			    sizeof(label));
		c->label_len = strlen(label);
	}
	cost = c->label_len + CHROME_INSTANT_LEN;
	if (c->group && (time - c->first_us < CHROME_GROUP_US ||
			 r->chrome_bytes + r->group_cost + cost >
			 r->noret_calls * BFP_ENTRY_LEN)) {
		c->group++;
		c->last_us = time;
		return;
	}
	chrome_group(r, th, c);
	c->group = 1;
	c->first_us = c->last_us = time;
	r->group_cost += cost;
}

static void route_one(struct route *r, const struct pending *p)
{
	uint64_t time = (uint64_t)p->time * 1000 + p->us;
	struct rthread *th = NULL;
	struct method *m = NULL;

	/* a marker may come at the hello (bfcollector's first bftrace.us) */
	if (!r->have_t0 && p->id != BFP_MARKER) {
		r->t0 = time;
		r->have_t0 = true;
	}
	if (p->id != BFP_MARKER) {
		th = thread_get(r, p->thread);
		if (!th)
			return;
		th->seen = true;
		th->last_time = time;
		r->unnamed_thread_uses += !th->mapped;
		m = method_get(r, p->method, false);
		r->unmapped_method_uses += !m || !m->mapped;
	}
	if (time > r->last_time)
		r->last_time = time;
	switch (p->id) {
	case BFP_METHOD_ENTRY:
		if (m && m->noret) {
			instant(r, th, m, time);
			break;
		}
		hq_bprintf(&th->canon, " e%" PRIu32, p->method);
		enter(r, th, p->method, time);
		break;
	case BFP_METHOD_EXIT:
		do_exit(r, th, p->method, time,
			p->thrown ? "exception thrown" : NULL, 'x', NULL);
		break;
	case BFP_EXCEPTION_BUBBLE: {
		char note[300], etmp[24];
		const char *exc = exception_note(r, p->exception, etmp,
						 sizeof(etmp));

		snprintf(note, sizeof(note), "unwound (%s)", exc);
		do_exit(r, th, p->method, time, note, 'u', exc);
		break;
	}
	case BFP_EXCEPTION:
		throw(r, th, p, time);
		break;
	case BFP_MARKER:
		r->markers++;
		/* bfcollector's declaration of a method without exits is
		 * for us, not an event to show */
		if (p->key && !strcmp(p->key, "bftrace.noret") && p->value) {
			route_declare_noret(r, p->value);
			break;
		}
		/* bfcollector reports events lost before the wire this way */
		if (p->key && !strcmp(p->key, "bftrace.lost") && p->value)
			r->lost += strtoull(p->value, NULL, 10);
		chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:{s:s}}",
					  "name", p->key ? p->key : "",
					  "ph", "i", "s", "g",
					  "ts", chrome_ts(r, time),
					  "pid", (json_int_t)r->pid_default,
					  "args", "value",
					  p->value ? p->value : ""));
		pft_marker(r->pft, pft_ns(r, time), p->key ? p->key : "",
			   p->value ? p->value : "");
		break;
	}
}

size_t route_hold_max = 64 << 20;

/* Every thread's text to the spill file. */
static void spill_all(struct route *r)
{
	uint32_t i;

	r->held = 0;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		spill_put(&r->spill, r->dir, &th->text_spilled, &th->text);
		spill_put(&r->spill, r->dir, &th->canon_spilled, &th->canon);
		/* all of it, unless a spill failed and kept it */
		th->held = th->text.len + th->canon.len;
		r->held += th->held;
	}
}

void route_event(struct route *r, const struct pending *p)
{
	struct rthread *th;

	route_one(r, p);
	th = p->id == BFP_MARKER ? NULL : thread_at(r, p->thread);
	if (!th)
		return;
	r->held += th->text.len + th->canon.len - th->held;
	th->held = th->text.len + th->canon.len;
	if (r->held > route_hold_max && !r->spill.err)
		spill_all(r);
}

static void void_thread(struct route *r, struct rthread *th, const char *cause)
{
	uint32_t n = th->depth;

	hq_bprintf(&th->canon, " |");
	if (!th->named_in_json)
		chrome_name(r, th);
	pft_instant(r->pft, th->id, pft_ns(r, th->last_time), cause, 1);
	while (th->depth) {
		r->voided_frames++;
		leave(r, th, th->last_time, cause);
	}
	hq_bprintf(&th->text, "%10s | ---- %s: %u frame%s cut ----\n", "",
		   cause, n, n == 1 ? "" : "s");
}

void route_void(struct route *r, const char *cause)
{
	uint32_t i;

	r->voids++;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		if (th->seen)
			void_thread(r, th, cause);
	}
}

void route_void_thread(struct route *r, uint16_t thread, const char *cause)
{
	struct rthread *th = thread_at(r, thread);

	if (th && th->seen)
		void_thread(r, th, cause);
}

/* ---- setup and output ---- */

struct route *route_new(const struct trace *t, const char *dir)
{
	struct route *r = calloc(1, sizeof(*r));
	char path[4200];

	if (!r)
		return NULL;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->pid_default = t->run_id;
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	r->chrome = fopen(path, "w");
	if (!r->chrome)
		hq_log("cannot write %s: %s", path, strerror(errno));
	else
		chrome_put(CHROME_HEAD, strlen(CHROME_HEAD), r);
	r->chrome_first = true;
	spill_init(&r->spill);
	snprintf(path, sizeof(path), "%s/trace.pftrace", dir);
	r->pft = pft_open(path);
	if (!r->pft)
		hq_log("cannot write %s: %s", path, strerror(errno));
	return r;
}

void route_free(struct route *r)
{
	uint32_t i;

	if (!r)
		return;
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);

		while (th->depth)
			sig_put(th->stack[--th->depth].bname);
		free(th->name);
		free(th->stack);
		free(th->noret);
		bft_buf_free(&th->text);
		bft_buf_free(&th->canon);
		spill_list_free(&th->text_spilled);
		spill_list_free(&th->canon_spilled);
		free(th);
	}
	/* the tables are mostly empty slots: a sanitizer's free() of NULL
	 * still records where it came from */
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].sig)
			sig_put(r->methods[i].sig);
	for (i = 0; i < r->ecap; i++)
		if (r->exceptions[i].sig)
			sig_put(r->exceptions[i].sig);
	free(r->methods);
	free(r->exceptions);
	free(r->nodes);
	free(r->order);
	for (i = 0; i < THREAD_PAGES; i++)
		if (r->thread_pages[i])
			free(r->thread_pages[i]);
	if (r->chrome)
		fclose(r->chrome);
	pft_close(r->pft);
	spill_close(&r->spill);
	free(r);
}

/* The path of output name: PATH_MAX of directory and a file name. */
struct out_path {
	char s[4200];
};

static const char *out_path(const struct route *r, const char *name,
			    struct out_path *p)
{
	snprintf(p->s, sizeof(p->s), "%s/%s", r->dir, name);
	return p->s;
}

static FILE *open_out(struct route *r, const char *name)
{
	struct out_path o;
	const char *path = out_path(r, name, &o);
	FILE *f = fopen(path, "w");

	if (!f)
		hq_log("cannot write %s: %s", path, strerror(errno));
	return f;
}

static int cmp_thread_name(const void *a, const void *b, void *ctx)
{
	struct route *r = ctx;
	const struct rthread *x = thread_at(r, *(const uint16_t *)a);
	const struct rthread *y = thread_at(r, *(const uint16_t *)b);
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->id - (int)y->id;
}

/*
 * The path of frames from the thread's root to node n, for folded.txt.
 * Walked upwards into ids, then printed downwards: a stack as deep as the
 * agent made it must not recurse.
 */
static void folded_path(struct route *r, struct bft_buf *b, uint32_t n,
			struct bft_buf *ids)
{
	const struct rthread *th;
	const uint32_t *v;
	size_t k;
	char tmp[24];
	const char *s;

	ids->len = 0;
	for (; r->nodes[n].parent != NO_NODE; n = r->nodes[n].parent)
		if (bft_buf_append(ids, &n, sizeof(n)))
			return;
	th = thread_at(r, (uint16_t)(UINT32_MAX - r->nodes[n].method));
	/* ';' and ' ' would break the format */
	for (s = th->name; *s; s++)
		hq_bprintf(b, "%c", *s == ';' ? ':' : *s == ' ' ? '_' : *s);
	v = (const uint32_t *)ids->data;
	for (k = ids->len / sizeof(*v); k-- > 0;)
		hq_bprintf(b, ";%s", method_name(r, r->nodes[v[k]].method, tmp,
					      sizeof(tmp)));
}

static int cmp_self(const void *a, const void *b)
{
	const struct method *x = *(struct method *const *)a;
	const struct method *y = *(struct method *const *)b;

	if (x->self_us != y->self_us)
		return x->self_us < y->self_us ? 1 : -1;
	if (x->calls != y->calls)
		return x->calls < y->calls ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void write_summary(struct route *r, const struct trace *t, FILE *f)
{
	struct method **top;
	uint32_t i, n = 0, used = 0, mapped = 0;

	fprintf(f, "bfhq trace-%u: run %u, protocol version %u\n", t->index,
		t->run_id, t->version);
	fprintf(f, "status:        %s%s", t->failed ? "failed: " :
		t->fail_msg[0] ? "ended: " : "complete",
		t->fail_msg);
	if (t->agent_error) {
		struct bft_buf esc = { 0 };

		hq_escape(&esc, t->agent_error, t->agent_error_len);
		fprintf(f, ": %.*s", (int)esc.len,
			esc.data ? (const char *)esc.data : "");
		bft_buf_free(&esc);
	}
	fputc('\n', f);
	fprintf(f, "calls:         %" PRIu64 " (exits %" PRIu64 ")\n",
		r->calls, r->exits);
	if (r->noret_methods)
		fprintf(f, "entries only:  %" PRIu64 " of the calls, of %" PRIu64
			" methods traced without their exits: counted, no "
			"durations\n", r->noret_calls, r->noret_methods);
	fprintf(f, "threads:       %u\n", r->nthreads);
	for (i = 0; i < r->mcap; i++) {
		if (!r->methods[i].used_slot)
			continue;
		mapped += r->methods[i].mapped;
		used += r->methods[i].calls > 0;
	}
	fprintf(f, "methods:       %u mapped, %u called\n", mapped, used);
	fprintf(f, "losses:        %" PRIu64 " events lost by the agent, %"
		PRIu64 " sequence numbers missing in %" PRIu64
		" gaps, %" PRIu64 " late\n", r->lost, t->gap_missing, t->gaps,
		t->late);
	if (t->lost_bound)
		fprintf(f, "reorder bound: %" PRIu64 " sequence numbers declared "
			"lost in %" PRIu64 " runs\n", t->lost_missing,
			t->lost_bound);
	fprintf(f, "data breaks:   %" PRIu64 " (%" PRIu64 " frames cut), %"
		PRIu64 " late (not applied)\n", t->breaks_seen,
		r->voided_frames, t->breaks_late);
	fprintf(f, "exits:         %" PRIu64 " without a frame, %" PRIu64
		" not matching the stack\n", r->orphans, r->mismatched);
	fprintf(f, "exceptions:    %" PRIu64 " thrown, %" PRIu64
		" frames unwound, %" PRIu64 " uses of an unmapped type\n",
		r->exceptions_seen, r->unwound, r->unmapped_exception_uses);
	fprintf(f, "open at end:   %" PRIu64 " frames\n", r->unclosed);
	if (r->noret_calls)
		fprintf(f, "trace.json:    %" PRIu64 " instants for those calls "
			"(calls close together are one, with their count)\n",
			r->instants);
	if (r->folded_cut)
		fprintf(f, "folded.txt:    %" PRIu64 " paths deeper than %u "
			"frames left out\n", r->folded_cut, FOLDED_MAX_DEPTH);
	fprintf(f, "before map:    %" PRIu64 " events of an unmapped method, %"
		PRIu64 " of an unnamed thread\n", r->unmapped_method_uses,
		r->unnamed_thread_uses);
	if (t->names_refused)
		fprintf(f, "names:         %" PRIu64 " maps refused past %u "
			"bytes of names\n", t->names_refused, HQ_NAMES_MAX);
	fprintf(f, "messages:      %" PRIu64 " sequenced, %" PRIu64
		" heartbeats (last mode %c)\n", t->routed, t->heartbeats,
		t->last_mode ? t->last_mode : '-');
	fprintf(f, "received:      %" PRIu64 " bytes of messages\n",
		t->wire_bytes);
	fprintf(f, "classes:       %" PRIu64 " transformed, %" PRIu64
		" ignored, %" PRIu64 " failed\n", t->classes[0], t->classes[1],
		t->classes[2]);
	top = calloc(r->mcount + 1, sizeof(*top));
	if (!top)
		return;
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].used_slot && r->methods[i].calls &&
		    !r->methods[i].noret)
			top[n++] = &r->methods[i];
	qsort(top, n, sizeof(*top), cmp_self);
	if (n)
		fprintf(f, "top methods by self time:\n%10s %10s %10s  %s\n",
			"self ms", "total ms", "calls", "method");
	for (i = 0; i < n && i < 20; i++) {
		char tmp[24], self[32], total[32];

		snprintf(self, sizeof(self), "%" PRIu64 ".%03u",
			 top[i]->self_us / 1000,
			 (unsigned int)(top[i]->self_us % 1000));
		snprintf(total, sizeof(total), "%" PRIu64 ".%03u",
			 top[i]->total_us / 1000,
			 (unsigned int)(top[i]->total_us % 1000));
		fprintf(f, "%10s %10s %10" PRIu64 "  %s\n", self, total,
			top[i]->calls,
			method_name(r, top[i]->id, tmp, sizeof(tmp)));
	}
	n = 0;
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].used_slot && r->methods[i].calls &&
		    r->methods[i].noret)
			top[n++] = &r->methods[i];
	qsort(top, n, sizeof(*top), cmp_self);	/* no time: by calls */
	if (n)
		fprintf(f, "top methods traced by entries only:\n%10s  %s\n",
			"calls", "method");
	for (i = 0; i < n && i < 20; i++) {
		char tmp[24];

		fprintf(f, "%10" PRIu64 "  %s\n", top[i]->calls,
			method_name(r, top[i]->id, tmp, sizeof(tmp)));
	}
	free(top);
}

/*
 * tree.txt's account of a thread's entries of entries-only methods: how
 * often each was entered, most first; a frame per entry would nest for
 * ever, since none of them is seen to return.
 */
static void tree_noret(struct route *r, struct rthread *th, FILE *f)
{
	struct method **v;
	uint32_t i, n = 0;
	uint64_t calls = 0;
	char tmp[24];

	if (!th->ncount)
		return;
	v = calloc(th->ncount, sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < th->ncap; i++)
		if (th->noret[i].used_slot) {
			v[n++] = &th->noret[i];
			calls += th->noret[i].calls;
		}
	qsort(v, n, sizeof(*v), cmp_self);
	fprintf(f, "%10s | ---- entries only (no exits traced): %" PRIu64
		" calls of %u methods ----\n", "", calls, n);
	for (i = 0; i < n; i++)
		fprintf(f, "%8" PRIu64 " x | %s\n", v[i]->calls,
			method_name(r, v[i]->id, tmp, sizeof(tmp)));
	free(v);
}

static int cmp_id(const void *a, const void *b)
{
	const struct method *x = *(struct method *const *)a;
	const struct method *y = *(struct method *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void write_methods(struct route *r, FILE *f)
{
	struct method **v = calloc(r->mcount + 1, sizeof(*v));
	uint32_t i, n = 0;
	char tmp[24];

	if (!v)
		return;
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].used_slot)
			v[n++] = &r->methods[i];
	qsort(v, n, sizeof(*v), cmp_id);
	for (i = 0; i < n; i++)
		fprintf(f, "%" PRIu32 " %" PRIu64 " %s\n", v[i]->id, v[i]->calls,
			method_name(r, v[i]->id, tmp, sizeof(tmp)));
	free(v);
}

static void write_exceptions(struct route *r, FILE *f)
{
	struct method **v = calloc(r->ecount + 1, sizeof(*v));
	uint32_t i, n = 0;
	char tmp[24];

	if (!v)
		return;
	for (i = 0; i < r->ecap; i++)
		if (r->exceptions[i].used_slot)
			v[n++] = &r->exceptions[i];
	qsort(v, n, sizeof(*v), cmp_id);
	for (i = 0; i < n; i++)
		fprintf(f, "%" PRIu32 " %" PRIu64 " %s\n", v[i]->id,
			v[i]->calls,
			exception_name(r, v[i]->id, tmp, sizeof(tmp)));
	free(v);
}

int route_finish(struct route *r, const struct trace *t, FILE *out)
{
	uint16_t *sorted = malloc((r->nthreads + 1) * sizeof(*sorted));
	struct bft_buf path = { 0 }, ids = { 0 };
	struct out_path p1, p2;
	char title[64];
	uint32_t i;
	FILE *f;
	int err;

	if (!sorted)
		return -ENOMEM;
	/* Frames still open: closed at the thread's last time. */
	for (i = 0; i < r->nthreads; i++) {
		struct rthread *th = thread_at(r, r->order[i]);
		uint32_t k;

		while (th->depth) {
			r->unclosed++;
			leave(r, th, th->last_time, "still open at the end");
		}
		for (k = 0; k < th->ncap; k++)
			if (th->noret[k].used_slot)
				chrome_group(r, th, &th->noret[k]);
	}
	if (r->chrome) {
		fputs("\n]}\n", r->chrome);
		fclose(r->chrome);
		r->chrome = NULL;
	}
	err = pft_close(r->pft);
	r->pft = NULL;
	if (err)
		hq_log("cannot write %s: %s", out_path(r, "trace.pftrace", &p1),
		       strerror(-err));
	if (r->nthreads)	/* no order allocated yet */
		memcpy(sorted, r->order, r->nthreads * sizeof(*sorted));
	qsort_r(sorted, r->nthreads, sizeof(*sorted), cmp_thread_name, r);
	f = open_out(r, "tree.txt");
	if (f) {
		for (i = 0; i < r->nthreads; i++) {
			struct rthread *th = thread_at(r, sorted[i]);

			fprintf(f, "# thread %u: %s (%" PRIu64 " calls, depth "
				"%u%s)\n%10s | FUNCTION\n", th->id, th->name,
				th->calls, th->max_depth,
				th->renames ? ", renamed" : "", "DURATION");
			err = spill_copy(&r->spill, &th->text_spilled, f);
			if (err)
				hq_log("cannot read back tree.txt's text: %s",
				       strerror(-err));
			/* a thread that was only named has no text at all */
			if (th->text.len)
				fwrite(th->text.data, 1, th->text.len, f);
			tree_noret(r, th, f);
			fputc('\n', f);
		}
		fclose(f);
	}
	f = open_out(r, "calls.txt");
	if (f) {
		for (i = 0; i < r->nthreads; i++) {
			struct rthread *th = thread_at(r, sorted[i]);

			fprintf(f, "%s:", th->name);
			err = spill_copy(&r->spill, &th->canon_spilled, f);
			if (err)
				hq_log("cannot read back calls.txt's text: %s",
				       strerror(-err));
			fprintf(f, "%.*s\n", (int)th->canon.len,
				(const char *)th->canon.data);
		}
		fclose(f);
	}
	f = open_out(r, "methods.txt");
	if (f) {
		write_methods(r, f);
		fclose(f);
	}
	f = open_out(r, "exceptions.txt");
	if (f) {
		write_exceptions(r, f);
		fclose(f);
	}
	f = open_out(r, "folded.txt");
	if (f) {
		for (i = 0; i < r->nnodes; i++) {
			if (r->nodes[i].parent == NO_NODE)
				continue;
			if (r->nodes[i].depth > FOLDED_MAX_DEPTH) {
				r->folded_cut++;
				continue;
			}
			path.len = 0;
			folded_path(r, &path, i, &ids);
			fprintf(f, "%.*s %" PRIu64 "\n", (int)path.len,
				(const char *)path.data, r->nodes[i].self_us);
		}
		fclose(f);
	}
	snprintf(title, sizeof(title), "bfhq trace-%u", t->index);
	err = hq_write_flame(out_path(r, "folded.txt", &p1),
			     out_path(r, "flame.svg", &p2), title);
	if (err)
		hq_log("cannot write %s: %s", p2.s, strerror(-err));
	/* summary.txt says the trace is written: it comes last, whole */
	f = open_out(r, "summary.txt.part");
	if (f) {
		write_summary(r, t, f);
		if (fclose(f) || rename(out_path(r, "summary.txt.part", &p1),
					out_path(r, "summary.txt", &p2)))
			hq_log("cannot write %s: %s", p2.s, strerror(errno));
	}
	if (out) {
		write_summary(r, t, out);
		fprintf(out, "output:        %s\n", r->dir);
		fflush(out);
	}
	bft_buf_free(&path);
	bft_buf_free(&ids);
	free(sorted);
	return 0;
}
