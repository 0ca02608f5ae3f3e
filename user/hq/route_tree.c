// SPDX-License-Identifier: GPL-2.0
/*
 * Entering and leaving frames on a thread's shadow stack: tree.txt's and
 * calls.txt's text as it grows, the folded-stack trie, the times per
 * method, a throw and the frames an exception leaves.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "route.h"

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

/* ---- entering and leaving frames ---- */

/*
 * What tree.txt writes after a name to show a call: "()", unless the
 * signature has its parameters already (a demangled C++ name, "f(int)" or
 * "g() const").
 */
static const char *tree_call_parens(const char *name)
{
	return strchr(name, '(') ? "" : "()";
}

/* tree.txt's duration column, 10 columns as its header says. */
static void tree_duration(const struct route *r, struct bft_buf *b,
			  uint64_t us)
{
	hq_bduration(b, us, r->micro, 10);
	hq_bprintf(b, " | ");
}

static void tree_indent(struct bft_buf *b, uint32_t depth)
{
	if (depth > TREE_MAX_INDENT)
		hq_bprintf(b, "%*s[%" PRIu32 "] ", 2 * TREE_MAX_INDENT, "", depth);
	else
		hq_bprintf(b, "%*s", (int)(2 * depth), "");
}

/*
 * The top frame turned out not to be a leaf, or ends with a note: print its
 * opening line.  The pending frame must still be on the stack (frame_leave()
 * calls this before its pop); an empty stack has nothing to name.
 */
static void tree_flush_leaf(struct route *r, struct rthread *th)
{
	char tmp[24];
	const char *name;

	if (!th->leaf_pending)
		return;
	th->leaf_pending = false;
	if (!th->depth)
		return;
	hq_bprintf(&th->text, "%10s | ", "");
	tree_indent(&th->text, th->depth - 1);
	name = method_show(r, th->stack[th->depth - 1].method, tmp,
			   sizeof(tmp));
	hq_bprintf(&th->text, "%s%s {\n", name, tree_call_parens(name));
}

void frame_enter(struct route *r, struct rthread *th, uint32_t method,
		 uint64_t time)
{
	struct frame *f;
	struct method *m = method_get(r, method, true);
	char tmp[24];

	tree_flush_leaf(r, th);
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
static void frame_leave_exc(struct route *r, struct rthread *th,
			    uint64_t time, const char *note, const char *exc)
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
		tree_flush_leaf(r, th);
	f = th->stack[--th->depth];
	m = method_get(r, f.method, false);
	dur = time >= f.enter ? time - f.enter : 0;
	self = dur >= f.child_us ? dur - f.child_us : 0;
	name = method_show(r, f.method, tmp, sizeof(tmp));
	tree_duration(r, &th->text, dur);
	tree_indent(&th->text, th->depth);
	if (th->leaf_pending) {
		hq_bprintf(&th->text, "%s%s;\n", name, tree_call_parens(name));
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
		speedscope_end(r->ssc, th->id, (uint64_t)chrome_ts(r, time));
	}
	sig_put(f.bname);
}

void frame_leave(struct route *r, struct rthread *th, uint64_t time,
		 const char *note)
{
	frame_leave_exc(r, th, time, note, NULL);
}

/*
 * An exit ('x'), or a bubble ('u': the frame was left by exception exc),
 * naming method.
 */
void frame_exit(struct route *r, struct rthread *th, uint32_t method,
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
		frame_leave(r, th, time, "no exit seen");
	}
	if (exc)
		r->unwound++;
	else
		r->exits++;
	hq_bprintf(&th->canon, " %c%" PRIu32, tok, method);
	frame_leave_exc(r, th, time, note, exc);
}

/* The name of exception id for a note; counts an unmapped use. */
const char *exception_note(struct route *r, uint32_t id, char *tmp,
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
void thread_throw(struct route *r, struct rthread *th,
		  const struct pending *p, uint64_t time)
{
	struct method *e = table_get(&r->exceptions, &r->ecap, &r->ecount,
				     p->exception, true);
	char tmp[24], etmp[24], pname[300];
	const char *exc = exception_note(r, p->exception, etmp, sizeof(etmp));
	const char *in = method_name(r, p->method, tmp, sizeof(tmp));
	char stmp[24];

	r->exceptions_seen++;
	if (e)
		e->calls++;
	tree_flush_leaf(r, th);
	hq_bprintf(&th->canon, " !%" PRIu32, p->exception);
	hq_bprintf(&th->text, "%10s | ", "");
	tree_indent(&th->text, th->depth);
	hq_bprintf(&th->text, "/* throw %s", exc);
	/* the frame that throws is the top one, unless the agent says not */
	if (!th->depth || th->stack[th->depth - 1].method != p->method)
		hq_bprintf(&th->text, " in %s",
			   method_show(r, p->method, stmp, sizeof(stmp)));
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

/*
 * calls.txt's token for a marker's key: readers split a line at its last
 * ':' and its tokens at spaces, and a USDT key is "provider:name".
 */
static void canon_key(struct bft_buf *canon, const char *key)
{
	struct bft_buf e = { 0 };
	size_t i;

	hq_escape(&e, key, strlen(key));
	bft_buf_append(canon, " m", 2);
	for (i = 0; i < e.len; i++) {
		char c = (char)e.data[i];

		if (c == ' ' || c == ':')
			hq_bprintf(canon, "\\x%02x", (unsigned int)c);
		else
			bft_buf_append(canon, &c, 1);
	}
	bft_buf_free(&e);
}

/*
 * tree.txt's time of a marker: since the agent's hello, as sent, to the
 * microsecond only if the agent measured it (a time, not a duration: its
 * digits are not rounded to a unit that reads well).
 */
static void tree_time(const struct route *r, struct bft_buf *b, uint64_t us)
{
	if (r->micro)
		hq_bprintf(b, "%" PRIu64 ".%03u ms", us / 1000,
			   (unsigned int)(us % 1000));
	else
		hq_bprintf(b, "%" PRIu64 " ms", us / 1000);
}

/*
 * A marker bfcollector placed in th (a probe hit): a line in its top frame
 * (which is then no leaf), escaped as the live copy's text so that no key
 * or value can break the tree's lines; an instant on th's timelines.
 */
void thread_marker(struct route *r, struct rthread *th,
		   const struct pending *p, uint64_t time)
{
	const char *key = p->key ? p->key : "";
	const char *value = p->value ? p->value : "";

	tree_flush_leaf(r, th);
	canon_key(&th->canon, key);
	hq_bprintf(&th->text, "%10s | ", "");
	tree_indent(&th->text, th->depth);
	bft_buf_append(&th->text, "* ", 2);
	hq_escape(&th->text, key, strlen(key));
	if (*value) {
		bft_buf_append(&th->text, " ", 1);
		hq_escape(&th->text, value, strlen(value));
	}
	bft_buf_append(&th->text, " @ ", 3);
	tree_time(r, &th->text, time);
	bft_buf_append(&th->text, "\n", 1);
	if (!th->named_in_json)
		chrome_name(r, th);
	chrome_event(r, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:{s:s}}",
				  "name", key, "ph", "i", "s", "t",
				  "ts", chrome_ts(r, time),
				  "pid", (json_int_t)th->pid,
				  "tid", (json_int_t)th->tid,
				  "args", "value", value));
	pft_thread_marker(r->pft, th->id, pft_ns(r, time), key, value);
}
