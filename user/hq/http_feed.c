// SPDX-License-Identifier: GPL-2.0
/*
 * What one viewer of bfhq --http is sent: a trace's live directory
 * (docs/live-format.md) tailed the way seed 002's viewer reads it.  Every
 * refill looks again at meta.json, the streams' indexes and names, and
 * turns what complete index entries newly cover, up to the safe frontier
 * (the minimum over the streams of their latest end times; everything
 * once the trace ended), into Server-Sent Events:
 *
 *   meta       meta.json, when it was replaced
 *   names      the new lines of names, each method's ("M") followed by
 *              "S <id> <display form>" when that differs (bft_shortname):
 *              the page shows what bfhq's text outputs print, the whole
 *              signature on hover, with no second copy of the rules
 *   stream     a stream's id ("markers" for the markers'), then its lines
 *   bad        how many index entries were not followed (they made no sense)
 *   frontier   the time everything is shown up to
 *   end        the trace ended and all of it was sent
 *   sent       only if asked (events?stamps): the wall clock in
 *              microseconds when the stream events before it were queued
 *
 * A feed of lines (feed_new_lines()) tails one file of whole lines
 * instead, each line one event: the counters' samples.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "hq.h"
#include "http_feed.h"
#include "live.h"
#include "model/bft_shortname.h"

/* More than any flush writes to one stream (a bad entry otherwise). */
#define FEED_ENTRY_MAX		(256u << 20)
/* What one refill may queue: a big trace goes out in pieces. */
#define FEED_REFILL_MAX		(1u << 20)
/*
 * What one refill reads of names: more than bfhq's longest line (a 64 KiB
 * name, escaped), so that a viewer never holds the whole file.
 */
#define FEED_NAMES_MAX		(1u << 20)
/* A line of the counters' is one sample: 32767 counters at most. */
#define FEED_LINE_MAX		(16u << 20)

static void stream_path(char *out, size_t n, const char *dir, unsigned int id,
			const char *ext)
{
	if (id == LIVE_MARKERS)
		snprintf(out, n, "%s/stream-markers.%s", dir, ext);
	else
		snprintf(out, n, "%s/stream-%u.%s", dir, id, ext);
}

struct fstream {
	unsigned int id;
	int data_fd, index_fd;
	uint64_t index_read;	/* bytes of whole records consumed */
	uint64_t last_end;	/* end time of its latest entry */
	bool has_entry;
	bool final;		/* its last entry is flagged final */
	bool broken;		/* an entry made no sense: read no further */
	uint64_t covered;	/* data bytes the entries read cover */
	uint64_t head_sent;	/* bytes of q[qhead] already sent */
	struct live_index_entry *q;	/* read, not yet sent */
	size_t qhead, qlen, qcap;
};

struct feed {
	char dir[PATH_MAX];	/* the trace's live/ directory */
	struct fstream *s;
	size_t ns;
	uint64_t frontier;	/* sent up to this time */
	bool frontier_sent;
	bool final;		/* meta.json says the trace ended */
	bool ended;		/* "end" queued: nothing follows */
	uint64_t names_off;
	uint64_t bad, bad_sent;	/* entries ignored (read_index()) */
	struct stat meta_st;	/* of the meta.json last sent */
	struct bft_buf *out;	/* feed_refill()'s */
	bool stamps;		/* feed_stamps() */
	const char *line_event;	/* feed_new_lines(): dir is the file */
	uint64_t lines_off;	/* bytes of whole lines sent */
};

/* ---- small helpers ---- */

static void bputs(struct bft_buf *b, const char *s)
{
	bft_buf_append(b, s, strlen(s));
}

/* Each line of p (n bytes) as an SSE "data:" line; \r would end one. */
static void sse_lines(struct bft_buf *b, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) : n;
		size_t at;

		bputs(b, "data: ");
		at = b->len;
		bft_buf_append(b, p, len);
		for (size_t i = at; i < b->len; i++)
			if (b->data[i] == '\r')
				b->data[i] = ' ';
		bputs(b, "\n");
		p += len + (nl != NULL);
		n -= len + (nl != NULL);
	}
}

static void sse_event(struct bft_buf *b, const char *event, const char *p,
		      size_t n)
{
	bputs(b, "event: ");
	bputs(b, event);
	bputs(b, "\n");
	if (!n)
		bputs(b, "data: \n");
	else
		sse_lines(b, p, n);
	bputs(b, "\n");
}

int feed_read_at(int fd, uint64_t off, size_t n, struct bft_buf *b)
{
	size_t at;
	ssize_t r;

	if (bft_buf_reserve(b, n))
		return -1;
	at = b->len;
	while (n) {
		r = pread(fd, b->data + at, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		at += (size_t)r;
		off += (uint64_t)r;
		n -= (size_t)r;
	}
	b->len = at;
	return 0;
}

/* ---- the live directory, tailed ---- */

static struct fstream *stream_get(struct feed *f, unsigned int id)
{
	struct fstream *s;
	char path[PATH_MAX + 128];
	size_t i;

	for (i = 0; i < f->ns; i++)
		if (f->s[i].id == id)
			return &f->s[i];
	s = realloc(f->s, (f->ns + 1) * sizeof(*s));
	if (!s)
		return NULL;
	f->s = s;
	s = &f->s[f->ns];
	*s = (struct fstream){ .id = id, .data_fd = -1, .index_fd = -1 };
	stream_path(path, sizeof(path), f->dir, id, "index");
	s->index_fd = open(path, O_RDONLY | O_CLOEXEC);
	stream_path(path, sizeof(path), f->dir, id, "data");
	s->data_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->index_fd < 0 || s->data_fd < 0) {
		if (s->index_fd >= 0)
			close(s->index_fd);
		if (s->data_fd >= 0)
			close(s->data_fd);
		return NULL;	/* looked for again at the next refill */
	}
	f->ns++;
	return s;
}

static void scan_streams(struct feed *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned int id;
		int end = 0;

		if (!strcmp(e->d_name, "stream-markers.index"))
			stream_get(f, LIVE_MARKERS);
		else if (!strncmp(e->d_name, "stream-", 7) &&
			 e->d_name[7] >= '0' && e->d_name[7] <= '9' &&
			 sscanf(e->d_name, "stream-%u.index%n", &id,
				&end) == 1 && end && !e->d_name[end] &&
			 id < LIVE_MARKERS)
			stream_get(f, id);
	}
	closedir(d);
}

static int queue_push(struct fstream *s, const struct live_index_entry *e)
{
	if (s->qhead && s->qlen == s->qcap) {
		memmove(s->q, s->q + s->qhead,
			(s->qlen - s->qhead) * sizeof(*e));
		s->qlen -= s->qhead;
		s->qhead = 0;
	}
	if (s->qlen == s->qcap) {
		size_t cap = s->qcap ? 2 * s->qcap : 64;
		struct live_index_entry *q = realloc(s->q, cap * sizeof(*q));

		if (!q)
			return -1;
		s->q = q;
		s->qcap = cap;
	}
	s->q[s->qlen++] = *e;
	return 0;
}

/*
 * The whole records appended to s's index since the last look.  One that
 * does not follow the one before (not contiguous, an end time that goes
 * back, a size no flush writes) ends the stream's index for this viewer:
 * counted in f->bad, as is data an entry covers that cannot be read.
 */
static void read_index(struct feed *f, struct fstream *s)
{
	unsigned char rec[LIVE_INDEX_RECORD];
	struct live_index_entry e;
	struct stat st;

	if (s->broken || fstat(s->index_fd, &st))
		return;
	while (s->index_read + sizeof(rec) <= (uint64_t)st.st_size) {
		if (pread(s->index_fd, rec, sizeof(rec),
			  (off_t)s->index_read) != (ssize_t)sizeof(rec))
			return;
		live_index_decode(rec, &e);
		if (e.offset != s->covered || e.size > FEED_ENTRY_MAX ||
		    (s->has_entry && e.end < s->last_end)) {
			s->broken = true;
			f->bad++;
			return;
		}
		if (e.size && queue_push(s, &e))
			return;		/* read again at the next look */
		s->index_read += sizeof(rec);
		s->covered += e.size;
		s->last_end = e.end;
		s->has_entry = true;
		s->final |= e.flags & LIVE_FLAG_FINAL;
	}
}

/* meta.json again if it was replaced; its state decides f->final. */
static void read_meta(struct feed *f)
{
	char path[PATH_MAX + 96];
	json_error_t err;
	json_t *meta;
	const char *state;
	struct stat st;
	char *s;

	snprintf(path, sizeof(path), "%s/meta.json", f->dir);
	if (stat(path, &st) || (st.st_ino == f->meta_st.st_ino &&
				st.st_size == f->meta_st.st_size &&
				st.st_mtim.tv_sec == f->meta_st.st_mtim.tv_sec &&
				st.st_mtim.tv_nsec == f->meta_st.st_mtim.tv_nsec))
		return;
	meta = json_load_file(path, 0, &err);
	if (!meta)
		return;		/* being replaced: the next look sees it */
	f->meta_st = st;
	state = json_string_value(json_object_get(meta, "state"));
	if (state && (!strcmp(state, "finished") || !strcmp(state, "failed")))
		f->final = true;
	s = json_dumps(meta, JSON_COMPACT);
	if (s) {
		sse_event(f->out, "meta", s, strlen(s));
		free(s);
	}
	json_decref(meta);
}

/*
 * Lines of names (n bytes, whole lines without the last '\n') into b,
 * each method's followed by its display form's.  The form is made from
 * the escaped name: escapes hold no bracket, so it comes out escaped.
 */
static void names_shown(struct bft_buf *b, const char *p, size_t n)
{
	const char *end = p + n, *nl, *sp;
	char *tmp = NULL, *grown;
	size_t len;

	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		len = (size_t)(nl - p);
		bft_buf_append(b, p, len);
		bft_buf_append(b, "\n", 1);
		sp = len > 2 && p[0] == 'M' && p[1] == ' ' ?
		     memchr(p + 2, ' ', len - 2) : NULL;
		if (!sp)
			continue;
		/* folding "<a>" into "<...>" lengthens it: twice is room */
		grown = realloc(tmp, 3 * len + 17);
		if (!grown)
			break;
		tmp = grown;
		memcpy(tmp, sp + 1, (size_t)(nl - sp - 1));
		tmp[nl - sp - 1] = 0;
		bft_shortname(tmp, tmp + len + 1, 2 * len + 16);
		if (strcmp(tmp, tmp + len + 1))
			hq_bprintf(b, "S %.*s %s\n", (int)(sp - p - 2), p + 2,
				   tmp + len + 1);
	}
	free(tmp);
	if (b->len)
		b->len--;	/* sse_lines() ends the last */
}

/*
 * The names appended since the last look, whole lines only, at most
 * FEED_NAMES_MAX bytes of them.  false: there is more to read, which the
 * stream lines after them may need.
 */
static bool read_names(struct feed *f)
{
	char path[PATH_MAX + 96];
	struct bft_buf b = { 0 };
	struct stat st;
	uint64_t left = 0;
	size_t want;
	int fd;

	snprintf(path, sizeof(path), "%s/names", f->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	if (!fstat(fd, &st) && (uint64_t)st.st_size > f->names_off)
		left = (uint64_t)st.st_size - f->names_off;
	want = left > FEED_NAMES_MAX ? FEED_NAMES_MAX : (size_t)left;
	if (want && !feed_read_at(fd, f->names_off, want, &b)) {
		unsigned char *nl = memrchr(b.data, '\n', b.len);

		if (nl) {
			size_t n = (size_t)(nl - b.data);
			struct bft_buf shown = { 0 };

			names_shown(&shown, (char *)b.data, n);
			sse_event(f->out, "names", (char *)shown.data,
				  shown.len);
			bft_buf_free(&shown);
			f->names_off += n + 1;
		} else if (want == FEED_NAMES_MAX) {
			/* no line of bfhq's: not followed */
			f->names_off += want;
			f->bad++;
		}
		left -= want;
	}
	bft_buf_free(&b);
	close(fd);
	return !left;
}

/* The time of a data line, 0 if it does not parse (it is sent as is). */
static uint64_t line_time(const char *p, size_t n)
{
	struct live_line l;

	if (n && p[n - 1] == '\n')
		n--;
	return live_parse_line(p, n, &l) ? 0 : l.time_us;
}

/*
 * Append to data what s's entries cover up to frontier: whole entries
 * that end by then, and of the next one the lines not later than it
 * (docs/live-format.md, "Reading").  false: not all of it (budget, or a
 * read that failed), look again.
 */
static bool stream_take(struct feed *f, struct fstream *s,
			uint64_t frontier, struct bft_buf *data, size_t budget)
{
	while (s->qhead < s->qlen) {
		struct live_index_entry *e = &s->q[s->qhead];
		uint64_t off = e->offset + s->head_sent;
		size_t n = (size_t)(e->size - s->head_sent), at = data->len;

		if (data->len > budget)
			return false;
		if (feed_read_at(s->data_fd, off, n, data)) {
			/* the index said it was synced: it never will be */
			data->len = at;
			f->bad++;
			s->qhead++;
			s->head_sent = 0;
			continue;
		}
		if (e->end > frontier) {
			/* the lines up to the frontier, then stop */
			const char *p = (char *)data->data + at;
			size_t keep = 0;

			while (keep < n) {
				const char *nl = memchr(p + keep, '\n',
							n - keep);
				size_t len = nl ? (size_t)(nl - p) - keep + 1 :
						  n - keep;

				if (line_time(p + keep, len) > frontier)
					break;
				keep += len;
			}
			data->len = at + keep;
			s->head_sent += keep;
			return true;
		}
		s->qhead++;
		s->head_sent = 0;
	}
	return true;
}

/*
 * The whole lines the file has past what was sent, one event each; a
 * line still being written waits for its newline.
 */
static void refill_lines(struct feed *f, struct bft_buf *out)
{
	struct bft_buf data = { 0 };
	struct stat st;
	size_t done = 0, n;
	uint64_t left;
	int fd = open(f->dir, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	if ((uint64_t)st.st_size < f->lines_off)
		f->lines_off = 0;	/* a new inspector started it over */
	left = (uint64_t)st.st_size - f->lines_off;
	n = left > FEED_LINE_MAX ? FEED_LINE_MAX : (size_t)left;
	if (n && !feed_read_at(fd, f->lines_off, n, &data)) {
		for (;;) {
			const char *p = (const char *)data.data + done;
			const char *nl = memchr(p, '\n', data.len - done);

			if (!nl)
				break;
			if (nl > p)
				sse_event(out, f->line_event, p,
					  (size_t)(nl - p));
			done += (size_t)(nl - p) + 1;
		}
		f->lines_off += done;
	}
	bft_buf_free(&data);
	close(fd);
}

/*
 * Queue what the indexes now cover: everything if the trace ended, else up
 * to the safe frontier, the minimum over the streams with an entry of
 * their latest end times (docs/live-format.md).
 */
bool feed_refill(struct feed *f, struct bft_buf *out)
{
	uint64_t frontier = UINT64_MAX;
	struct bft_buf data = { 0 };
	bool all = true, indexed = false, lines = false;
	size_t i;

	f->out = out;
	if (f->ended)
		return true;
	if (f->line_event) {
		refill_lines(f, out);
		return false;
	}
	read_meta(f);
	scan_streams(f);
	for (i = 0; i < f->ns; i++) {
		struct fstream *s = &f->s[i];

		read_index(f, s);
		if (!s->has_entry || s->broken)
			continue;
		indexed = true;
		if (!s->final && s->last_end < frontier)
			frontier = s->last_end;
	}
	if (!indexed)
		frontier = 0;
	if (f->final)
		frontier = UINT64_MAX;
	if (frontier < f->frontier)
		frontier = f->frontier;	/* never take anything back */
	if (!read_names(f))
		return false;	/* the rest first: the lines may need them */
	for (i = 0; i < f->ns; i++) {
		struct fstream *s = &f->s[i];
		char head[16];

		data.len = 0;
		if (f->out->len > FEED_REFILL_MAX ||
		    !stream_take(f, s, frontier, &data, FEED_REFILL_MAX))
			all = false;
		if (!data.len)
			continue;
		lines = true;
		if (s->id == LIVE_MARKERS)
			snprintf(head, sizeof(head), "markers\n");
		else
			snprintf(head, sizeof(head), "%u\n", s->id);
		bputs(f->out, "event: stream\ndata: ");
		bputs(f->out, head);
		sse_lines(f->out, (char *)data.data, data.len);
		bputs(f->out, "\n");
	}
	bft_buf_free(&data);
	if (lines && f->stamps) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, live_wall_us());
		sse_event(f->out, "sent", t, strlen(t));
	}
	if (f->bad != f->bad_sent) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, f->bad);
		sse_event(f->out, "bad", t, strlen(t));
		f->bad_sent = f->bad;
	}
	if (!all)
		return false;
	if (frontier != UINT64_MAX && indexed &&
	    (frontier > f->frontier || !f->frontier_sent)) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, frontier);
		sse_event(f->out, "frontier", t, strlen(t));
		f->frontier_sent = true;
	}
	f->frontier = frontier;
	if (f->final) {
		for (i = 0; i < f->ns; i++)
			if (f->s[i].qhead < f->s[i].qlen)
				return false;
		sse_event(f->out, "end", NULL, 0);
		f->ended = true;
	}
	return f->ended;
}

struct feed *feed_new(const char *dir)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (f)
		snprintf(f->dir, sizeof(f->dir), "%s", dir);
	return f;
}

struct feed *feed_new_lines(const char *path, const char *event)
{
	struct feed *f = feed_new(path);

	if (f)
		f->line_event = event;
	return f;
}

void feed_stamps(struct feed *f)
{
	f->stamps = true;
}

void feed_free(struct feed *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->ns; i++) {
		close(f->s[i].data_fd);
		close(f->s[i].index_fd);
		free(f->s[i].q);
	}
	free(f->s);
	free(f);
}
