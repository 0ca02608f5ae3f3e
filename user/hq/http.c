// SPDX-License-Identifier: GPL-2.0
/*
 * bfhq --http: the live viewer's server (libmicrohttpd, its own thread).
 *
 * It reads only the files of docs/live-format.md under the output
 * directory, never bfhq's memory: the receive loop is never held up by a
 * viewer, and a finished trace, the directory of a killed bfhq and a
 * --replay all look the same to it.
 *
 *   GET /                        the page (www/index.html)
 *   GET /static/NAME             the page's scripts and styles (www/NAME)
 *   GET /api/traces              the traces with a live/ directory, and
 *                                their meta.json
 *   GET /api/traces/N/events     Server-Sent Events of trace-N: everything
 *                                the indexes cover so far, then what new
 *                                entries cover, as they appear
 *
 * A viewer's stream is a content reader callback.  When it has nothing to
 * send it suspends its connection; a ticker thread resumes the suspended
 * ones every HTTP_TICK_MS to look again.  So no thread waits for a viewer,
 * and one that went away is noticed at the next write (a keep-alive
 * comment at least every HTTP_KEEPALIVE_MS), which frees its state.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "bft_util.h"
#include "hq.h"
#include "http.h"
#include "live.h"

#define HTTP_TICK_MS		25
#define HTTP_KEEPALIVE_MS	5000
#define HTTP_MAX_CONNS		256
#define HTTP_STATIC_MAX		(4u << 20)
/* More than any flush writes to one stream (a bad entry otherwise). */
#define HTTP_ENTRY_MAX		(256u << 20)
/* What one refill may queue: a big trace goes out in pieces. */
#define HTTP_REFILL_MAX		(1u << 20)

/*
 * An index record of the live files (docs/live-format.md): data offset,
 * size, begin time, end time (u64 each), events, flags (u32 each),
 * little-endian.
 */
#define LIVE_DIR		"live"

struct live_index_entry {
	uint64_t offset, size, begin, end;
	uint32_t events, flags;
};

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void live_index_decode(const unsigned char *p,
			      struct live_index_entry *e)
{
	e->offset = le(p, 8);
	e->size = le(p + 8, 8);
	e->begin = le(p + 16, 8);
	e->end = le(p + 24, 8);
	e->events = (uint32_t)le(p + 32, 4);
	e->flags = (uint32_t)le(p + 36, 4);
}

static void stream_path(char *out, size_t n, const char *dir, unsigned int id,
			const char *ext)
{
	if (id == LIVE_MARKERS)
		snprintf(out, n, "%s/stream-markers.%s", dir, ext);
	else
		snprintf(out, n, "%s/stream-%u.%s", dir, id, ext);
}

struct vstream {
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

struct viewer {
	struct hq_http *h;
	struct MHD_Connection *conn;
	char dir[PATH_MAX + 64];	/* the trace's live/ directory */
	struct vstream *s;
	size_t ns;
	uint64_t frontier;	/* sent up to this time */
	bool frontier_sent;
	bool final;		/* meta.json says the trace ended */
	bool ended;		/* "end" queued: the stream closes after it */
	uint64_t names_off;
	uint64_t bad, bad_sent;	/* entries ignored (read_index()) */
	struct stat meta_st;	/* of the meta.json last sent */
	struct bft_buf out;
	size_t out_pos;
	uint64_t last_write_ms;
	bool suspended;		/* under h->lock */
	struct viewer *next;	/* h->viewers, under h->lock */
};

struct hq_http {
	struct MHD_Daemon *d;
	char outdir[PATH_MAX];
	char www[PATH_MAX + 64];
	unsigned int port;
	pthread_t ticker;
	bool ticker_running;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;		/* under lock */
	struct viewer *viewers;
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

static int read_at(int fd, uint64_t off, size_t n, struct bft_buf *b)
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

/* ---- a viewer's view of the live directory ---- */

static struct vstream *stream_get(struct viewer *v, unsigned int id)
{
	struct vstream *s;
	char path[PATH_MAX + 128];
	size_t i;

	for (i = 0; i < v->ns; i++)
		if (v->s[i].id == id)
			return &v->s[i];
	s = realloc(v->s, (v->ns + 1) * sizeof(*s));
	if (!s)
		return NULL;
	v->s = s;
	s = &v->s[v->ns];
	*s = (struct vstream){ .id = id, .data_fd = -1, .index_fd = -1 };
	stream_path(path, sizeof(path), v->dir, id, "index");
	s->index_fd = open(path, O_RDONLY | O_CLOEXEC);
	stream_path(path, sizeof(path), v->dir, id, "data");
	s->data_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->index_fd < 0 || s->data_fd < 0) {
		if (s->index_fd >= 0)
			close(s->index_fd);
		if (s->data_fd >= 0)
			close(s->data_fd);
		return NULL;	/* looked for again at the next refill */
	}
	v->ns++;
	return s;
}

static void scan_streams(struct viewer *v)
{
	DIR *d = opendir(v->dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned int id;
		int end = 0;

		if (!strcmp(e->d_name, "stream-markers.index"))
			stream_get(v, LIVE_MARKERS);
		else if (!strncmp(e->d_name, "stream-", 7) &&
			 e->d_name[7] >= '0' && e->d_name[7] <= '9' &&
			 sscanf(e->d_name, "stream-%u.index%n", &id,
				&end) == 1 && end && !e->d_name[end] &&
			 id < LIVE_MARKERS)
			stream_get(v, id);
	}
	closedir(d);
}

static int queue_push(struct vstream *s, const struct live_index_entry *e)
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
 * counted in v->bad, as is data an entry covers that cannot be read.
 */
static void read_index(struct viewer *v, struct vstream *s)
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
		if (e.offset != s->covered || e.size > HTTP_ENTRY_MAX ||
		    (s->has_entry && e.end < s->last_end)) {
			s->broken = true;
			v->bad++;
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

/* meta.json again if it was replaced; its state decides v->final. */
static void read_meta(struct viewer *v)
{
	char path[PATH_MAX + 96];
	json_error_t err;
	json_t *meta;
	const char *state;
	struct stat st;
	char *s;

	snprintf(path, sizeof(path), "%s/meta.json", v->dir);
	if (stat(path, &st) || (st.st_ino == v->meta_st.st_ino &&
				st.st_size == v->meta_st.st_size &&
				st.st_mtim.tv_sec == v->meta_st.st_mtim.tv_sec &&
				st.st_mtim.tv_nsec == v->meta_st.st_mtim.tv_nsec))
		return;
	meta = json_load_file(path, 0, &err);
	if (!meta)
		return;		/* being replaced: the next look sees it */
	v->meta_st = st;
	state = json_string_value(json_object_get(meta, "state"));
	if (state && (!strcmp(state, "finished") || !strcmp(state, "failed")))
		v->final = true;
	s = json_dumps(meta, JSON_COMPACT);
	if (s) {
		sse_event(&v->out, "meta", s, strlen(s));
		free(s);
	}
	json_decref(meta);
}

/* The names appended since the last look, whole lines only. */
static void read_names(struct viewer *v)
{
	char path[PATH_MAX + 96];
	struct bft_buf b = { 0 };
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/names", v->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && (uint64_t)st.st_size > v->names_off &&
	    !read_at(fd, v->names_off, (size_t)(st.st_size - v->names_off),
		     &b)) {
		unsigned char *nl = memrchr(b.data, '\n', b.len);

		if (nl) {
			size_t n = (size_t)(nl - b.data);

			sse_event(&v->out, "names", (char *)b.data, n);
			v->names_off += n + 1;
		}
	}
	bft_buf_free(&b);
	close(fd);
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
static bool stream_take(struct viewer *v, struct vstream *s,
			uint64_t frontier, struct bft_buf *data, size_t budget)
{
	while (s->qhead < s->qlen) {
		struct live_index_entry *e = &s->q[s->qhead];
		uint64_t off = e->offset + s->head_sent;
		size_t n = (size_t)(e->size - s->head_sent), at = data->len;

		if (data->len > budget)
			return false;
		if (read_at(s->data_fd, off, n, data)) {
			/* the index said it was synced: it never will be */
			data->len = at;
			v->bad++;
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
 * Queue what the indexes now cover: everything if the trace ended, else up
 * to the safe frontier, the minimum over the streams with an entry of
 * their latest end times (docs/live-format.md).
 */
static void refill(struct viewer *v)
{
	uint64_t frontier = UINT64_MAX;
	struct bft_buf data = { 0 };
	bool all = true, indexed = false;
	size_t i;

	read_meta(v);
	scan_streams(v);
	for (i = 0; i < v->ns; i++) {
		struct vstream *s = &v->s[i];

		read_index(v, s);
		if (!s->has_entry || s->broken)
			continue;
		indexed = true;
		if (!s->final && s->last_end < frontier)
			frontier = s->last_end;
	}
	if (!indexed)
		frontier = 0;
	if (v->final)
		frontier = UINT64_MAX;
	if (frontier < v->frontier)
		frontier = v->frontier;	/* never take anything back */
	read_names(v);
	for (i = 0; i < v->ns; i++) {
		struct vstream *s = &v->s[i];
		char head[16];

		data.len = 0;
		if (v->out.len > HTTP_REFILL_MAX ||
		    !stream_take(v, s, frontier, &data, HTTP_REFILL_MAX))
			all = false;
		if (!data.len)
			continue;
		if (s->id == LIVE_MARKERS)
			snprintf(head, sizeof(head), "markers\n");
		else
			snprintf(head, sizeof(head), "%u\n", s->id);
		bputs(&v->out, "event: stream\ndata: ");
		bputs(&v->out, head);
		sse_lines(&v->out, (char *)data.data, data.len);
		bputs(&v->out, "\n");
	}
	bft_buf_free(&data);
	if (v->bad != v->bad_sent) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, v->bad);
		sse_event(&v->out, "bad", t, strlen(t));
		v->bad_sent = v->bad;
	}
	if (!all)
		return;
	if (frontier != UINT64_MAX && indexed &&
	    (frontier > v->frontier || !v->frontier_sent)) {
		char t[32];

		snprintf(t, sizeof(t), "%" PRIu64, frontier);
		sse_event(&v->out, "frontier", t, strlen(t));
		v->frontier_sent = true;
	}
	v->frontier = frontier;
	if (v->final) {
		for (i = 0; i < v->ns; i++)
			if (v->s[i].qhead < v->s[i].qlen)
				return;
		sse_event(&v->out, "end", NULL, 0);
		v->ended = true;
	}
}

static void viewer_free(struct viewer *v)
{
	size_t i;

	for (i = 0; i < v->ns; i++) {
		close(v->s[i].data_fd);
		close(v->s[i].index_fd);
		free(v->s[i].q);
	}
	free(v->s);
	bft_buf_free(&v->out);
	free(v);
}

static ssize_t viewer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct viewer *v = cls;
	struct hq_http *h = v->h;
	uint64_t now = hq_now_ms();
	size_t n;

	(void)pos;
	pthread_mutex_lock(&h->lock);
	if (h->stopping) {
		pthread_mutex_unlock(&h->lock);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&h->lock);
	if (v->out_pos == v->out.len) {
		v->out.len = v->out_pos = 0;
		if (v->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		refill(v);
	}
	if (v->out_pos == v->out.len) {
		if (now - v->last_write_ms < HTTP_KEEPALIVE_MS) {
			pthread_mutex_lock(&h->lock);
			v->suspended = true;
			MHD_suspend_connection(v->conn);
			pthread_mutex_unlock(&h->lock);
			return 0;
		}
		bputs(&v->out, ": keep-alive\n\n");
	}
	n = v->out.len - v->out_pos;
	if (n > max)
		n = max;
	memcpy(buf, v->out.data + v->out_pos, n);
	v->out_pos += n;
	v->last_write_ms = now;
	return (ssize_t)n;
}

static void viewer_done(void *cls)
{
	struct viewer *v = cls;
	struct hq_http *h = v->h;
	struct viewer **p;

	pthread_mutex_lock(&h->lock);
	for (p = &h->viewers; *p; p = &(*p)->next)
		if (*p == v) {
			*p = v->next;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	viewer_free(v);
}

static void *ticker(void *arg)
{
	struct hq_http *h = arg;
	struct timespec ts;

	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		struct viewer *v;

		for (v = h->viewers; v; v = v->next)
			if (v->suspended) {
				v->suspended = false;
				MHD_resume_connection(v->conn);
			}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += HTTP_TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* ---- routes ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
			     const char *type, const void *p, size_t n)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(n, (void *)p,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c,
				  unsigned int status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", text,
		     strlen(text));
}

static const char *content_type(const char *name)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return "application/octet-stream";
}

/* www/NAME: a plain name, no directories, no dot files. */
static enum MHD_Result serve_static(struct hq_http *h, struct MHD_Connection *c,
				    const char *name)
{
	char path[PATH_MAX + 64 + 300];
	struct bft_buf b = { 0 };
	struct stat st;
	enum MHD_Result ret;
	int fd;

	if (!*name || name[0] == '.' || strlen(name) > 255 ||
	    name[strspn(name, "abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")])
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such file\n");
	snprintf(path, sizeof(path), "%s/%s", h->www, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such file\n");
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > HTTP_STATIC_MAX ||
	    (st.st_size && read_at(fd, 0, (size_t)st.st_size, &b))) {
		close(fd);
		bft_buf_free(&b);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot read the file\n");
	}
	close(fd);
	ret = reply(c, MHD_HTTP_OK, content_type(name), b.data, b.len);
	bft_buf_free(&b);
	return ret;
}

static int cmp_trace(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t **)a,
							  "trace"));
	json_int_t y = json_integer_value(json_object_get(*(json_t **)b,
							  "trace"));

	return x < y ? -1 : x > y;
}

/* trace-<N> (N decimal, no sign, no leading zero); -1 if not. */
static long trace_number(const char *s)
{
	char *end;
	long n;

	if (strncmp(s, "trace-", 6) || s[6] < '1' || s[6] > '9')
		return -1;
	errno = 0;
	n = strtol(s + 6, &end, 10);
	return errno || *end || n > 1000000000L ? -1 : n;
}

static enum MHD_Result serve_list(struct hq_http *h, struct MHD_Connection *c)
{
	json_t *list = json_array(), **v = NULL;
	char path[PATH_MAX + 300];
	struct dirent *e;
	enum MHD_Result ret;
	size_t n = 0, i;
	DIR *d;
	char *s;

	d = opendir(h->outdir);
	while (d && list && (e = readdir(d))) {
		long num = trace_number(e->d_name);
		json_error_t err;
		json_t *t, *meta;

		if (num < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/" LIVE_DIR, h->outdir,
			 e->d_name);
		if (access(path, R_OK | X_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s/" LIVE_DIR "/meta.json",
			 h->outdir, e->d_name);
		meta = json_load_file(path, 0, &err);
		t = json_pack("{s:I,s:o}", "trace", (json_int_t)num, "meta",
			      meta ? meta : json_null());
		if (t && !meta)
			json_object_set_new(t, "error", json_string(err.text));
		if (t)
			json_array_append_new(list, t);
	}
	if (d)
		closedir(d);
	if (!list)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "memory\n");
	/* sorted by number, not by readdir's order */
	n = json_array_size(list);
	v = calloc(n ? n : 1, sizeof(*v));
	for (i = 0; v && i < n; i++)
		v[i] = json_incref(json_array_get(list, i));
	if (v) {
		qsort(v, n, sizeof(*v), cmp_trace);
		json_array_clear(list);
		for (i = 0; i < n; i++)
			json_array_append_new(list, v[i]);
		free(v);
	}
	s = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (!s)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "memory\n");
	ret = reply(c, MHD_HTTP_OK, "application/json", s, strlen(s));
	free(s);
	return ret;
}

static enum MHD_Result serve_events(struct hq_http *h,
				    struct MHD_Connection *c, const char *num)
{
	char name[32];
	struct MHD_Response *r;
	struct viewer *v;
	enum MHD_Result ret;
	struct stat st;

	snprintf(name, sizeof(name), "trace-%s", num);
	if (trace_number(name) < 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such trace\n");
	v = calloc(1, sizeof(*v));
	if (!v)
		return MHD_NO;
	v->h = h;
	v->conn = c;
	v->last_write_ms = hq_now_ms();
	snprintf(v->dir, sizeof(v->dir), "%s/%s/" LIVE_DIR, h->outdir, name);
	if (stat(v->dir, &st) || !S_ISDIR(st.st_mode)) {
		free(v);
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "no live data for this trace\n");
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
					      viewer_read, v, viewer_done);
	if (!r) {
		free(v);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	pthread_mutex_lock(&h->lock);
	v->next = h->viewers;
	h->viewers = v;
	pthread_mutex_unlock(&h->lock);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct hq_http *h = cls;
	const char *events;
	char num[16];
	size_t n;

	(void)version;
	(void)upload;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "GET only\n");
	/* a GET has no body: answer on the first call */
	if (*upload_size)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "no body, please\n");
	(void)con_cls;
	if (!strcmp(url, "/"))
		return serve_static(h, c, "index.html");
	if (!strncmp(url, "/static/", 8))
		return serve_static(h, c, url + 8);
	if (!strcmp(url, "/api/traces"))
		return serve_list(h, c);
	if (!strncmp(url, "/api/traces/", 12)) {
		events = strchr(url + 12, '/');
		n = events ? (size_t)(events - (url + 12)) : 0;
		if (events && !strcmp(events, "/events") && n &&
		    n < sizeof(num)) {
			memcpy(num, url + 12, n);
			num[n] = 0;
			return serve_events(h, c, num);
		}
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* ---- start and stop ---- */

/* www/ next to the binary: installed, or in the source tree. */
static int find_www(char *out, size_t n)
{
	static const char *const rel[] = {
		"../share/bftrace/www",	/* $(PREFIX)/bin/bfhq */
		"../../user/hq/www",	/* build/user/bfhq */
	};
	const char *env = getenv("BFHQ_WWW");
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	ssize_t len;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/index.html", exe, rel[i]);
		if (!access(path, R_OK)) {
			snprintf(out, n, "%s/%s", exe, rel[i]);
			return 0;
		}
	}
	return -1;
}

struct hq_http *hq_http_start(const char *host, unsigned int port,
			      const char *outdir)
{
	struct hq_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int fd;

	if (!h)
		return NULL;
	if (find_www(h->www, sizeof(h->www))) {
		hq_log("--http: the page's files (www/index.html) are neither "
		       "installed next to bfhq nor in its source tree; set "
		       "BFHQ_WWW to their directory");
		free(h);
		return NULL;
	}
	snprintf(h->outdir, sizeof(h->outdir), "%s", outdir);
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	fd = hq_listen_on(host, port);
	if (fd < 0)
		goto fail;
	if (!getsockname(fd, (struct sockaddr *)&sa, &salen))
		port = ntohs(sa.ss_family == AF_INET6 ?
			     ((struct sockaddr_in6 *)&sa)->sin6_port :
			     ((struct sockaddr_in *)&sa)->sin_port);
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
				MHD_USE_ERROR_LOG,
				0, NULL, NULL, handle, h,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNS,
				MHD_OPTION_CONNECTION_TIMEOUT, 120u,
				MHD_OPTION_END);
	if (!h->d) {
		hq_log("--http: libmicrohttpd did not start");
		close(fd);
		goto fail;
	}
	if (pthread_create(&h->ticker, NULL, ticker, h)) {
		hq_log("--http: cannot start its thread");
		MHD_stop_daemon(h->d);
		close(fd);
		goto fail;
	}
	h->ticker_running = true;
	h->port = port;
	hq_log("live viewer on http://%s%s%s:%u/ (page from %s)",
	       strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	       port, h->www);
	return h;
fail:
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return NULL;
}

unsigned int hq_http_port(const struct hq_http *h)
{
	return h->port;
}

unsigned int hq_http_viewers(struct hq_http *h)
{
	unsigned int n = 0;
	struct viewer *v;

	pthread_mutex_lock(&h->lock);
	for (v = h->viewers; v; v = v->next)
		n++;
	pthread_mutex_unlock(&h->lock);
	return n;
}

void hq_http_stop(struct hq_http *h)
{
	struct viewer *v;
	int fd;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	if (h->ticker_running)
		pthread_join(h->ticker, NULL);
	/* A suspended connection must be resumed to be closed: its reader
	 * then ends the stream. */
	pthread_mutex_lock(&h->lock);
	for (v = h->viewers; v; v = v->next)
		if (v->suspended) {
			v->suspended = false;
			MHD_resume_connection(v->conn);
		}
	pthread_mutex_unlock(&h->lock);
	fd = MHD_quiesce_daemon(h->d);
	MHD_stop_daemon(h->d);
	if (fd >= 0)
		close(fd);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
