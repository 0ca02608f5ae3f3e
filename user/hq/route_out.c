// SPDX-License-Identifier: GPL-2.0
/*
 * What a route writes when its trace ends: tree.txt and calls.txt (with
 * what went to the spill file), methods.txt, exceptions.txt, folded.txt,
 * flame.svg and, last, summary.txt.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"

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

static FILE *out_open(struct route *r, const char *name)
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
		hq_bprintf(b, ";%s", method_show(r, r->nodes[v[k]].method, tmp,
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

static void summary_write(struct route *r, const struct trace *t, FILE *f)
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
	if (r->filtered_min_time || r->filtered_caller)
		fprintf(f, "filtered:      %" PRIu64 " calls shorter than "
			"--min-time, %" PRIu64 " outside --caller (by the "
			"agent)\n", r->filtered_min_time, r->filtered_caller);
	if (t->lost_bound)
		fprintf(f, "reorder bound: %" PRIu64 " sequence numbers declared "
			"lost in %" PRIu64 " runs\n", t->lost_missing,
			t->lost_bound);
	if (t->udp_dgrams || t->udp_malformed || t->udp_end_known)
		fprintf(f, "datagrams:     %" PRIu64 " received, %" PRIu64
			" lost, %" PRIu64 " duplicated, %" PRIu64 " late, %"
			PRIu64 " malformed\n", t->udp_dgrams, t->udp_lost,
			t->udp_dup, t->udp_late, t->udp_malformed);
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
			"self", "total", "calls", "method");
	for (i = 0; i < n && i < 20; i++) {
		struct bft_buf line = { 0 };
		char tmp[24];

		hq_bduration(&line, top[i]->self_us, r->micro, 10);
		hq_bprintf(&line, " ");
		hq_bduration(&line, top[i]->total_us, r->micro, 10);
		fprintf(f, "%.*s %10" PRIu64 "  %s\n", (int)line.len,
			line.data ? (const char *)line.data : "",
			top[i]->calls,
			method_show(r, top[i]->id, tmp, sizeof(tmp)));
		bft_buf_free(&line);
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
			method_show(r, top[i]->id, tmp, sizeof(tmp)));
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
			method_show(r, v[i]->id, tmp, sizeof(tmp)));
	free(v);
}

static int cmp_id(const void *a, const void *b)
{
	const struct method *x = *(struct method *const *)a;
	const struct method *y = *(struct method *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void methods_write(struct route *r, FILE *f)
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

/*
 * The methods by display form, for flame.svg's tooltips: the whole
 * signatures behind a box, which overloads share.
 */
struct shows {
	struct method **v;
	uint32_t n;
};

static int cmp_show(const void *a, const void *b)
{
	const struct method *x = *(struct method *const *)a;
	const struct method *y = *(struct method *const *)b;
	int c = strcmp(x->sig->s + x->sig->show, y->sig->s + y->sig->show);

	return c ? c : cmp_id(a, b);
}

/* Signatures of one box at most, the rest counted. */
#define FLAME_TIP_SIGS	8

static void flame_full_of(const char *name, struct bft_buf *b, void *arg)
{
	const struct shows *sh = arg;
	uint32_t lo = 0, hi = sh->n, k;

	while (lo < hi) {	/* the first whose display form >= name */
		uint32_t mid = lo + (hi - lo) / 2;
		const struct sig *g = sh->v[mid]->sig;

		if (strcmp(g->s + g->show, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < sh->n; k++) {
		const struct sig *g = sh->v[k]->sig;

		if (strcmp(g->s + g->show, name))
			break;
		if (k - lo >= FLAME_TIP_SIGS)
			continue;
		hq_bprintf(b, "%s%s", k > lo ? "\n" : "", g->s);
	}
	if (k - lo > FLAME_TIP_SIGS)
		hq_bprintf(b, "\n(and %u more)", k - lo - FLAME_TIP_SIGS);
}

static void shows_make(struct route *r, struct shows *sh)
{
	uint32_t i;

	sh->n = 0;
	sh->v = calloc(r->mcount + 1, sizeof(*sh->v));
	if (!sh->v)
		return;
	for (i = 0; i < r->mcap; i++)
		if (r->methods[i].used_slot && r->methods[i].sig)
			sh->v[sh->n++] = &r->methods[i];
	qsort(sh->v, sh->n, sizeof(*sh->v), cmp_show);
}

static void exceptions_write(struct route *r, FILE *f)
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
	struct shows shows;
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
			frame_leave(r, th, th->last_time,
				    "still open at the end");
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
	err = speedscope_close(r->ssc);
	r->ssc = NULL;
	if (err)
		hq_log("cannot write %s: %s",
		       out_path(r, "trace.speedscope.json", &p1),
		       strerror(-err));
	if (r->nthreads)	/* no order allocated yet */
		memcpy(sorted, r->order, r->nthreads * sizeof(*sorted));
	qsort_r(sorted, r->nthreads, sizeof(*sorted), cmp_thread_name, r);
	f = out_open(r, "tree.txt");
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
	f = out_open(r, "calls.txt");
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
	f = out_open(r, "methods.txt");
	if (f) {
		methods_write(r, f);
		fclose(f);
	}
	f = out_open(r, "exceptions.txt");
	if (f) {
		exceptions_write(r, f);
		fclose(f);
	}
	f = out_open(r, "folded.txt");
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
	shows_make(r, &shows);
	err = hq_write_flame(out_path(r, "folded.txt", &p1),
			     out_path(r, "flame.svg", &p2), title,
			     shows.v ? flame_full_of : NULL, &shows);
	free(shows.v);
	if (err)
		hq_log("cannot write %s: %s", p2.s, strerror(-err));
	/* summary.txt says the trace is written: it comes last, whole */
	f = out_open(r, "summary.txt.part");
	if (f) {
		summary_write(r, t, f);
		if (fclose(f) || rename(out_path(r, "summary.txt.part", &p1),
					out_path(r, "summary.txt", &p2)))
			hq_log("cannot write %s: %s", p2.s, strerror(errno));
	}
	if (out) {
		summary_write(r, t, out);
		fprintf(out, "output:        %s\n", r->dir);
		fflush(out);
	}
	bft_buf_free(&path);
	bft_buf_free(&ids);
	free(sorted);
	return 0;
}
