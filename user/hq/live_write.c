// SPDX-License-Identifier: GPL-2.0
/*
 * The live copy of a trace, trace-<N>/live/, written while it is received
 * (docs/live-format.md).  Routed events are kept in routing order until
 * the next flush (and, from bfcollector, until their microseconds came); a
 * flush appends them to their streams, syncs the data, and only then
 * appends one index entry per stream, an empty one for a stream without
 * news: a reader trusts an index entry, so it must never point at data that
 * is not there.
 *
 * Besides the period's flush (the heartbeat of idle streams), a flush is
 * done as soon as routed lines are ready, a fifth of the period after the
 * one before at the earliest: waiting for the period would add up to a
 * period to the collector's own flush wait (docs/live-format.md).
 *
 * An I/O error stops the live copy of that trace (logged once); the usual
 * outputs do not depend on it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <jansson.h>
#include <linux/magic.h>

#include "hq.h"
#include "live.h"
#include "live_meta.h"

struct lstream {
	uint32_t id;		/* thread id, or LIVE_MARKERS */
	int data_fd, index_fd;
	uint64_t off;		/* data bytes written */
	struct bft_buf buf;	/* lines not yet written */
	uint32_t nlines;
	uint64_t begin_us;	/* of buf's first line */
	uint64_t last_us;	/* of the last event */
};

/*
 * Lines waiting for their microseconds: past this many, an agent that
 * declared them but sends no more is not waited for.
 */
#define LIVE_HOLD_MAX	(1u << 20)

/* A routed event or void, until a flush writes it. */
struct lrec {
	uint32_t stream;
	uint32_t seq;		/* |: the number after the void */
	uint64_t us;
	char op;		/* as in the data files */
	char cause[7];
	uint32_t a, b, c;	/* method, exception, line; |: first, count */
	char *text;		/* m: "key\tvalue", escaped */
	uint64_t routed_us;	/* wall clock, with --live-stamps */
};

/* With --live-stamps: a formatted record's times, until its index entry. */
struct lstamp {
	uint32_t seq;
	uint64_t routed_us, ready_us;
};

#define LIVE_PAGE	256
#define LIVE_PAGES	(LIVE_MARKERS / LIVE_PAGE + 1)

struct live {
	char dir[4096];
	struct lrec *recs;	/* in routing order */
	uint32_t nrecs, recs_cap;
	bool micro;		/* bftrace.us markers come */
	bool covered_set;
	uint32_t covered;	/* they covered every number before this */
	uint64_t micro_bad;	/* malformed ones, ignored */
	int names_fd;
	struct bft_buf names;	/* lines not yet written */
	/* by slot (the markers' 0, a thread's id + 1) in pages of
	 * LIVE_PAGE, a page made with its first stream: a trace has a few
	 * threads, and their ids may be anywhere in 16 bits */
	struct lstream **pages[LIVE_PAGES];
	struct lstream **order;	/* in order of appearance */
	uint32_t nstreams, order_cap;
	uint64_t frontier_us;	/* the latest event time routed */
	bool dirty;		/* lines to write at the next flush */
	bool broken;		/* an I/O error: no more live copy */
	bool ended;		/* the final flush is done */
	bool in_memory;		/* on tmpfs: fdatasync has nothing to wait for */
	uint64_t last_flush_ms, flushes, agent_lost;
	const struct hq_opts *o;	/* bfhq's, which outlive the trace */
	char *meta;		/* what meta.json holds now */
	/* what meta.json was made from: the same values make the same text,
	 * so a period without news skips building and comparing it */
	uint64_t meta_key[LIVE_META_KEYS];
	int stamps_fd;		/* --live-stamps: the stamps file, else -1 */
	struct bft_buf stamps;	/* struct lstamp of the lines not indexed */
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static void broken(struct live *l, const char *what, int err)
{
	if (!l->broken)
		hq_log("%s: %s: %s; the live copy stops here", l->dir, what,
		       strerror(err));
	l->broken = true;
}

static int open_in(struct live *l, const char *name, int flags)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", l->dir, name);
	fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		broken(l, name, errno);
	return fd;
}

/* A reused output directory: what an earlier bfhq left there goes. */
static void clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "stream-", 7) ||
		    !strcmp(e->d_name, "names") ||
		    !strcmp(e->d_name, "stamps") ||
		    !strncmp(e->d_name, "meta.json", 9))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

/* Room for slot in its page and for one more stream in l->order. */
static int make_room(struct live *l, uint32_t slot)
{
	struct lstream ***page = &l->pages[slot / LIVE_PAGE];

	if (!*page) {
		*page = calloc(LIVE_PAGE, sizeof(**page));
		if (!*page)
			return -ENOMEM;
	}
	if (l->nstreams == l->order_cap) {
		uint32_t n = l->order_cap ? 2 * l->order_cap : 8;
		struct lstream **v = realloc(l->order, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->order = v;
		l->order_cap = n;
	}
	return 0;
}

static struct lstream *stream_get(struct live *l, uint32_t id)
{
	uint32_t slot = id == LIVE_MARKERS ? 0 : id + 1;
	struct lstream **page = id <= LIVE_MARKERS ?
				l->pages[slot / LIVE_PAGE] : NULL;
	struct lstream *s = page ? page[slot % LIVE_PAGE] : NULL;
	char name[64];

	if (s || l->broken || id > LIVE_MARKERS || make_room(l, slot))
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->id = id;
	if (id == LIVE_MARKERS)
		snprintf(name, sizeof(name), "stream-markers");
	else
		snprintf(name, sizeof(name), "stream-%u", id);
	strcat(name, ".data");
	s->data_fd = open_in(l, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
	strcpy(strrchr(name, '.'), ".index");
	s->index_fd = open_in(l, name, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
	if (s->data_fd < 0 || s->index_fd < 0) {
		if (s->data_fd >= 0)
			close(s->data_fd);
		if (s->index_fd >= 0)
			close(s->index_fd);
		free(s);
		return NULL;
	}
	l->pages[slot / LIVE_PAGE][slot % LIVE_PAGE] = s;
	l->order[l->nstreams++] = s;
	return s;
}

static void line_start(struct live *l, struct lstream *s, uint64_t us)
{
	if (!s->nlines)
		s->begin_us = us;
	s->nlines++;
	l->dirty = true;
}

void live_name(struct live *l, char kind, uint32_t id, const char *name,
	       size_t len)
{
	if (!l || l->broken)
		return;
	hq_bprintf(&l->names, "%c %" PRIu32 " ", kind, id);
	hq_escape(&l->names, name ? name : "", name ? len : 0);
	bft_buf_append(&l->names, "\n", 1);
}

static struct lrec *rec_push(struct live *l)
{
	if (l->nrecs == l->recs_cap) {
		uint32_t cap = l->recs_cap ? 2 * l->recs_cap : 1024;
		struct lrec *v = realloc(l->recs, cap * sizeof(*v));

		if (!v) {
			broken(l, "memory", ENOMEM);
			return NULL;
		}
		l->recs = v;
		l->recs_cap = cap;
	}
	memset(&l->recs[l->nrecs], 0, sizeof(*l->recs));
	return &l->recs[l->nrecs++];
}

void live_event(struct live *l, const struct pending *p)
{
	static const char ops[] = {
		[BFP_METHOD_ENTRY] = 'e', [BFP_METHOD_EXIT] = 'x',
		[BFP_EXCEPTION] = '!', [BFP_EXCEPTION_BUBBLE] = 'u',
		[BFP_MARKER] = 'm',
	};
	struct lrec *r;

	if (!l || l->broken || p->id >= sizeof(ops) || !ops[p->id])
		return;
	r = rec_push(l);
	if (!r)
		return;
	r->op = ops[p->id];
	if (l->stamps_fd >= 0)
		r->routed_us = live_wall_us();
	if (r->op == 'x' && p->thrown)
		r->op = 't';
	if (r->op == 'e' && p->noret)
		r->op = 'n';
	r->stream = r->op == 'm' ? LIVE_MARKERS : p->thread;
	r->seq = p->seq;
	r->us = (uint64_t)p->time * 1000;
	r->a = p->method;
	r->b = p->exception;
	r->c = p->line;
	if (r->op == 'm') {
		struct bft_buf t = { 0 };

		hq_escape(&t, p->key, strlen(p->key));
		bft_buf_append(&t, "\t", 1);
		hq_escape(&t, p->value, strlen(p->value));
		bft_buf_append(&t, "", 1);
		r->text = (char *)t.data;
		if (!strcmp(p->key, "bftrace.lost"))
			l->agent_lost += strtoull(p->value, NULL, 10);
	}
}

void live_void(struct live *l, const char *cause, uint32_t first,
	       uint32_t count, uint32_t next)
{
	struct lrec *r;

	if (!l || l->broken)
		return;
	r = rec_push(l);
	if (!r)
		return;
	r->op = '|';
	r->seq = next;
	r->a = first;
	r->b = count;
	snprintf(r->cause, sizeof(r->cause), "%s", cause);
}

static bool seq_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

/*
 * "bftrace.us" from bfcollector: "<n> <d>,<d>,...", the sub-millisecond
 * parts of the n sequenced messages just before this one.  From the first
 * one on, lines wait until such a marker has covered them.
 */
void live_micro(struct live *l, const struct pending *p)
{
	uint32_t first, i, n = 0;
	uint16_t *d;
	int err;

	if (!l || l->broken)
		return;
	err = hq_micro_parse(p->value, &d, &n);
	if (err == -ENOMEM)
		return;
	l->micro = true;
	if (!l->covered_set || seq_before(l->covered, p->seq))
		l->covered = p->seq;
	l->covered_set = true;
	if (err) {
		l->micro_bad++;
		return;
	}
	first = p->seq - n;
	/* the records are in sequence order: the last ones are these */
	for (i = l->nrecs; i-- > 0;) {
		struct lrec *r = &l->recs[i];

		if (r->op == '|' || !seq_before(r->seq, p->seq))
			continue;
		if (seq_before(r->seq, first))
			break;
		r->us += d[r->seq - first];
	}
	free(d);
}

/* Lines of the records ready (all if final) into their streams. */
static void format_ready(struct live *l, bool final)
{
	uint32_t i, k, done = 0;

	for (i = 0; i < l->nrecs; i++) {
		struct lrec *r = &l->recs[i];
		struct lstream *s;

		if (!final && l->micro && l->nrecs - i <= LIVE_HOLD_MAX &&
		    (r->op == '|' ? seq_before(l->covered, r->seq) :
				    !seq_before(r->seq, l->covered)))
			break;
		done = i + 1;
		if (r->op == '|') {
			for (k = 0; k < l->nstreams; k++) {
				s = l->order[k];
				if (s->id == LIVE_MARKERS)
					continue;
				line_start(l, s, s->last_us);
				hq_bprintf(&s->buf, "| %" PRIu32 " %" PRIu64
					   " %s %" PRIu32 " %" PRIu32 "\n",
					   r->seq, s->last_us, r->cause, r->a,
					   r->b);
			}
			continue;
		}
		s = stream_get(l, r->stream);
		if (!s)
			break;
		if (l->stamps_fd >= 0) {
			struct lstamp st = { r->seq, r->routed_us,
					     live_wall_us() };

			bft_buf_append(&l->stamps, &st, sizeof(st));
		}
		line_start(l, s, r->us);
		s->last_us = r->us;
		if (r->us > l->frontier_us)
			l->frontier_us = r->us;
		hq_bprintf(&s->buf, "%c %" PRIu32 " %" PRIu64, r->op, r->seq,
			   r->us);
		switch (r->op) {
		case 'm':
			hq_bprintf(&s->buf, " %s\n", r->text);
			break;
		case '!':
			hq_bprintf(&s->buf, " %" PRIu32 " %" PRIu32 " %"
				   PRIu32 "\n", r->a, r->b, r->c);
			break;
		case 'u':
			hq_bprintf(&s->buf, " %" PRIu32 " %" PRIu32 "\n",
				   r->a, r->b);
			break;
		default:
			hq_bprintf(&s->buf, " %" PRIu32 "\n", r->a);
			break;
		}
	}
	if (!done)
		return;
	for (i = 0; i < done; i++)
		free(l->recs[i].text);
	memmove(l->recs, l->recs + done, (l->nrecs - done) * sizeof(*l->recs));
	l->nrecs -= done;
}

/*
 * s as a JSON string, quotes included; NULL: none.  Printable ASCII but
 * quote and backslash (what bfhq's messages are) stands as it is; jansson
 * escapes anything else.
 */
/* meta.json through a rename: readers see the old file or the new one. */
static void write_meta(struct live *l, const struct trace *t)
{
	char tmp[4200], path[4200];
	uint64_t key[LIVE_META_KEYS];
	char *text;
	int fd;

	struct live_meta m = { .o = l->o, .ended = l->ended, .micro = l->micro,
			       .flushes = l->flushes,
			       .frontier_us = l->frontier_us,
			       .agent_lost = l->agent_lost,
			       .micro_bad = l->micro_bad };

	live_meta_key(&m, t, key);
	if (l->meta && !l->ended && !memcmp(key, l->meta_key, sizeof(key)))
		return;
	text = live_meta_text(&m, t);
	if (!text || (l->meta && !strcmp(text, l->meta))) {
		if (text)
			memcpy(l->meta_key, key, sizeof(key));
		free(text);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s/meta.json.tmp", l->dir);
	snprintf(path, sizeof(path), "%s/meta.json", l->dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, text, strlen(text)) ||
	    write_all(fd, "\n", 1) || fdatasync(fd) || close(fd) ||
	    rename(tmp, path)) {
		if (fd >= 0)
			close(fd);
		broken(l, "meta.json", errno);
		free(text);
		return;
	}
	free(l->meta);
	l->meta = text;
	memcpy(l->meta_key, key, sizeof(key));
}

static void put_le(unsigned char *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int write_names(struct live *l)
{
	if (!l->names.len)
		return 0;
	if (write_all(l->names_fd, l->names.data, l->names.len) ||
	    fdatasync(l->names_fd)) {
		broken(l, "names", errno);
		return -1;
	}
	l->names.len = 0;
	return 0;
}

/* --live-stamps: "seq routed ready indexed", wall clock microseconds. */
static void write_stamps(struct live *l)
{
	const struct lstamp *st = (const void *)l->stamps.data;
	size_t i, n = l->stamps.len / sizeof(*st);
	uint64_t now = live_wall_us();
	struct bft_buf b = { 0 };

	if (l->stamps_fd < 0 || !n)
		return;
	for (i = 0; i < n; i++)
		hq_bprintf(&b, "%" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIu64
			   "\n", st[i].seq, st[i].routed_us, st[i].ready_us,
			   now);
	if (write_all(l->stamps_fd, b.data, b.len))
		hq_log("%s/stamps: %s", l->dir, strerror(errno));
	bft_buf_free(&b);
	l->stamps.len = 0;
}

/*
 * fdatasync(2) of n files side by side.  One after the other, each waits
 * for a journal commit and a disk cache flush of its own: a few ms each on
 * a loaded machine, 40 ms for the files of a calltree run's threads.
 * Together they share them.
 */
#define LIVE_SYNC_THREADS	8

struct sync_part {
	const int *fds;
	size_t n, first, step;
	int err;
};

static void *sync_part(void *arg)
{
	struct sync_part *p = arg;
	size_t i;

	for (i = p->first; i < p->n; i += p->step)
		if (fdatasync(p->fds[i]) && !p->err)
			p->err = errno;
	return NULL;
}

static int sync_files(const int *fds, size_t n)
{
	struct sync_part part[LIVE_SYNC_THREADS];
	pthread_t th[LIVE_SYNC_THREADS];
	bool started[LIVE_SYNC_THREADS] = { false };
	size_t k, nt = n < LIVE_SYNC_THREADS ? n : LIVE_SYNC_THREADS;
	int err = 0;

	for (k = 0; k < nt; k++)
		part[k] = (struct sync_part){ fds, n, k, nt, 0 };
	for (k = 1; k < nt; k++)
		started[k] = !pthread_create(&th[k], NULL, sync_part,
					     &part[k]);
	for (k = 0; k < nt; k++)
		if (!started[k])	/* part 0, and any without a thread */
			sync_part(&part[k]);
	for (k = 0; k < nt; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		if (part[k].err && !err)
			err = part[k].err;
	}
	return err;
}

static void flush(struct live *l, bool final)
{
	unsigned char rec[LIVE_INDEX_RECORD];
	uint32_t i;
	size_t nfds = 0;
	int *fds = malloc((l->nstreams + 1) * sizeof(*fds)), err;

	if (!fds)
		return broken(l, "memory", ENOMEM);
	if (l->names.len) {
		if (write_all(l->names_fd, l->names.data, l->names.len)) {
			free(fds);
			return broken(l, "names", errno);
		}
		l->names.len = 0;
		fds[nfds++] = l->names_fd;
	}
	for (i = 0; i < l->nstreams; i++) {
		struct lstream *s = l->order[i];

		if (!s->buf.len)
			continue;
		if (write_all(s->data_fd, s->buf.data, s->buf.len)) {
			free(fds);
			return broken(l, "stream data", errno);
		}
		fds[nfds++] = s->data_fd;
	}
	/* no threads to spawn for nothing: a multi-threaded process pays for
	 * every later munmap with a TLB shootdown on each CPU */
	err = l->in_memory ? 0 : sync_files(fds, nfds);
	free(fds);
	if (err)
		return broken(l, "stream data", err);
	/* Only now may the index point at it. */
	for (i = 0; i < l->nstreams; i++) {
		struct lstream *s = l->order[i];

		put_le(rec, s->off, 8);
		put_le(rec + 8, s->buf.len, 8);
		put_le(rec + 16, s->nlines ? s->begin_us : l->frontier_us, 8);
		put_le(rec + 24, l->frontier_us, 8);
		put_le(rec + 32, s->nlines, 4);
		put_le(rec + 36, final ? LIVE_FLAG_FINAL : 0, 4);
		if (write_all(s->index_fd, rec, sizeof(rec)))
			return broken(l, "stream index", errno);
		s->off += s->buf.len;
		s->buf.len = 0;
		s->nlines = 0;
	}
	l->flushes++;
	l->dirty = false;
	write_stamps(l);
}

/* The earliest a flush may follow the one before when lines are ready. */
static uint64_t eager_gap_ms(const struct live *l)
{
	return l->o->live_flush_ms / 5;
}

void live_tick(struct live *l, const struct trace *t, uint64_t now_ms,
	       bool force, bool final)
{
	bool period;

	if (!l || l->broken || l->ended)
		return;
	period = force || final ||
		 now_ms - l->last_flush_ms >= l->o->live_flush_ms;
	if (!period) {
		if (!l->nrecs || now_ms - l->last_flush_ms < eager_gap_ms(l))
			return;
		format_ready(l, false);
		if (!l->dirty)
			return;		/* still waiting for microseconds */
		l->last_flush_ms = now_ms;
		flush(l, false);
		return;		/* meta.json at the period's flush */
	}
	l->last_flush_ms = now_ms;
	format_ready(l, final);
	if (l->dirty || final)
		flush(l, final);
	else
		write_names(l);
	if (final)
		l->ended = true;
	if (!l->broken)
		write_meta(l, t);
}

int live_wait_ms(const struct live *l, uint64_t now_ms)
{
	uint64_t due;

	if (!l || l->broken || l->ended)
		return -1;
	due = l->last_flush_ms + (l->nrecs ? eager_gap_ms(l) :
				  l->o->live_flush_ms);
	return due > now_ms ? (int)(due - now_ms) : 0;
}

struct live *live_open(const struct hq *hq, const struct trace *t,
		       const char *trace_dir)
{
	struct live *l;
	struct statfs fs;

	if (!hq->o.live_flush_ms)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->names_fd = -1;
	l->stamps_fd = -1;
	snprintf(l->dir, sizeof(l->dir), "%s/live", trace_dir);
	l->o = &hq->o;
	l->last_flush_ms = hq_now_ms();
	if (mkdir(l->dir, 0755) && errno != EEXIST) {
		hq_log("cannot create %s: %s", l->dir, strerror(errno));
		free(l);
		return NULL;
	}
	clear_dir(l->dir);
	l->in_memory = !statfs(l->dir, &fs) && (fs.f_type == TMPFS_MAGIC ||
						fs.f_type == RAMFS_MAGIC);
	l->names_fd = open_in(l, "names", O_WRONLY | O_CREAT | O_TRUNC |
			      O_APPEND);
	if (hq->o.live_stamps)
		l->stamps_fd = open_in(l, "stamps", O_WRONLY | O_CREAT |
				       O_TRUNC | O_APPEND);
	if (!l->broken)
		write_meta(l, t);
	return l;
}

void live_close(struct live *l)
{
	uint32_t i;

	if (!l)
		return;
	for (i = 0; i < l->nstreams; i++) {
		struct lstream *s = l->order[i];

		close(s->data_fd);
		close(s->index_fd);
		bft_buf_free(&s->buf);
		free(s);
	}
	if (l->names_fd >= 0)
		close(l->names_fd);
	if (l->stamps_fd >= 0)
		close(l->stamps_fd);
	bft_buf_free(&l->stamps);
	bft_buf_free(&l->names);
	for (i = 0; i < l->nrecs; i++)
		free(l->recs[i].text);
	free(l->recs);
	free(l->order);
	for (i = 0; i < LIVE_PAGES; i++)
		if (l->pages[i])	/* free(NULL) costs a sanitizer a stack */
			free(l->pages[i]);
	free(l->meta);
	free(l);
}
