// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a live trace directory (docs/live-format.md) the way seed 002's
 * viewer does: only what complete index entries cover, and of that only
 * what is not later than the minimum of the streams' latest end times, so
 * that the next read only ever adds.  The writer may be running, finished,
 * or killed mid-write: torn records and lines are skipped and counted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "live.h"

/* The whole file, NUL-ended; at most max bytes. */
static char *slurp(int dirfd, const char *name, size_t max, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	size_t n = 0, cap = 4096;
	char *buf = NULL, *nb;
	ssize_t r;

	*len = 0;
	if (fd < 0)
		return NULL;
	for (;;) {
		if (n + 1 >= cap || !buf) {
			cap = buf ? 2 * cap : cap;
			nb = realloc(buf, cap);
			if (!nb)
				goto fail;
			buf = nb;
		}
		if (n >= max)
			break;
		r = read(fd, buf + n, (cap - 1 - n) < (max - n) ?
			 cap - 1 - n : max - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

static uint64_t get_le(const unsigned char *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

uint64_t live_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void live_index_decode(const unsigned char *p, struct live_index_entry *e)
{
	e->offset = get_le(p, 8);
	e->size = get_le(p + 8, 8);
	e->begin = get_le(p + 16, 8);
	e->end = get_le(p + 24, 8);
	e->events = (uint32_t)get_le(p + 32, 4);
	e->flags = (uint32_t)get_le(p + 36, 4);
}

/* Fill s from its index and data; the frontier cut comes later. */
static void read_stream(int dirfd, const char *index_name,
			struct live_stream *s, struct live_view *v)
{
	char data_name[300];
	unsigned char *idx;
	size_t ilen, dlen, k;
	uint64_t covered = 0;
	struct stat st;

	idx = (unsigned char *)slurp(dirfd, index_name, SIZE_MAX, &ilen);
	if (!idx)
		return;
	if (ilen % LIVE_INDEX_RECORD)
		v->torn++;
	snprintf(data_name, sizeof(data_name), "%.*s.data",
		 (int)(strlen(index_name) - 6), index_name);
	/* after the index: the data it covers was written before it */
	if (fstatat(dirfd, data_name, &st, 0))
		st.st_size = 0;
	for (k = 0; k + LIVE_INDEX_RECORD <= ilen; k += LIVE_INDEX_RECORD) {
		struct live_index_entry e;

		live_index_decode(idx + k, &e);
		/* contiguous, in the data, end times not going back */
		if (e.offset != covered ||
		    e.size > (uint64_t)st.st_size - e.offset ||
		    (s->entries && e.end < s->end_us)) {
			v->bad++;
			break;
		}
		covered = e.offset + e.size;
		s->end_us = e.end;
		s->final = e.flags & LIVE_FLAG_FINAL;
		s->entries++;
	}
	free(idx);
	s->data = slurp(dirfd, data_name, covered, &dlen);
	if (!s->data) {
		s->data = calloc(1, 1);
		dlen = 0;
	}
	if (dlen < covered) {
		v->bad++;	/* truncated since: what is left */
		covered = dlen;
	}
	s->indexed = covered;
	s->len = (size_t)covered;
	/* only whole lines, whatever an entry claims */
	while (s->len && s->data[s->len - 1] != '\n')
		s->len--;
	if (s->len != covered)
		v->bad++;
	if (s->data)
		s->data[s->len] = 0;
}

/* Keep of s the lines up to the first one later than the frontier. */
static void cut(struct live_stream *s, uint64_t frontier)
{
	size_t at = 0, keep = 0;
	struct live_line l;
	bool held = false;

	/* read_stream() left only whole lines */
	while (at < s->len) {
		char *nl = memchr(s->data + at, '\n', s->len - at);
		size_t n = (size_t)(nl - (s->data + at));

		if (!held && !live_parse_line(s->data + at, n, &l) &&
		    l.time_us > frontier)
			held = true;
		if (held) {
			s->held++;
		} else {
			s->lines++;
			keep = at + n + 1;
		}
		at += n + 1;
	}
	s->len = keep;
	s->data[keep] = 0;
}

static int cmp_stream(const void *a, const void *b)
{
	const struct live_stream *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* "stream-<id>.index" or "stream-markers.index": its id, or -1. */
static long stream_id(const char *name)
{
	size_t n = strlen(name);
	char *end;
	long id;

	if (n < 13 || strncmp(name, "stream-", 7) ||
	    strcmp(name + n - 6, ".index"))
		return -1;
	if (n == 7 + 7 + 6 && !strncmp(name + 7, "markers", 7))
		return LIVE_MARKERS;
	if (name[7] < '0' || name[7] > '9')
		return -1;
	id = strtol(name + 7, &end, 10);
	if (end != name + n - 6 || id < 0 || id >= (long)LIVE_MARKERS)
		return -1;
	return id;
}

int live_read_streams(const char *dir, struct live_view *v)
{
	struct dirent *e;
	size_t cap = 0, k;
	DIR *d;
	int fd;

	memset(v, 0, sizeof(*v));
	d = opendir(dir);
	if (!d)
		return -errno;
	fd = dirfd(d);
	while ((e = readdir(d))) {
		long id = stream_id(e->d_name);
		struct live_stream *s;

		if (id < 0)
			continue;
		if (v->nstreams == cap) {
			size_t nc = cap ? 2 * cap : 16;

			s = realloc(v->streams, nc * sizeof(*s));
			if (!s)
				break;
			v->streams = s;
			cap = nc;
		}
		s = &v->streams[v->nstreams++];
		memset(s, 0, sizeof(*s));
		s->id = (uint32_t)id;
		read_stream(fd, e->d_name, s, v);
		if (!s->data) {
			s->data = calloc(1, 1);
			if (!s->data) {
				v->nstreams--;
				continue;
			}
		}
	}
	if (v->nstreams)
		qsort(v->streams, v->nstreams, sizeof(*v->streams),
		      cmp_stream);
	for (k = 0; k < v->nstreams; k++) {
		const struct live_stream *s = &v->streams[k];

		if (!s->entries)
			continue;
		if (!v->have_frontier || s->end_us < v->frontier_us)
			v->frontier_us = s->end_us;
		v->have_frontier = true;
	}
	for (k = 0; k < v->nstreams; k++)
		cut(&v->streams[k], v->frontier_us);
	v->names = slurp(fd, "names", SIZE_MAX, &v->names_len);
	if (v->names) {
		size_t whole = v->names_len;

		while (whole && v->names[whole - 1] != '\n')
			whole--;
		v->torn += whole != v->names_len;
		v->names_len = whole;
		v->names[whole] = 0;
	}
	v->meta_text = slurp(fd, "meta.json", SIZE_MAX, &v->meta_len);
	closedir(d);
	return 0;
}

int live_read(const char *dir, struct live_view *v)
{
	int err = live_read_streams(dir, v);

	/* from memory: jansson reads a file a getc() at a time */
	if (!err && v->meta_text)
		v->meta = json_loadb(v->meta_text, v->meta_len, 0, NULL);
	return err;
}

void live_view_free(struct live_view *v)
{
	size_t k;

	for (k = 0; k < v->nstreams; k++)
		free(v->streams[k].data);
	free(v->streams);
	free(v->names);
	free(v->meta_text);
	json_decref(v->meta);
	memset(v, 0, sizeof(*v));
}

/* A decimal field and the space or end after it. */
static int field(const char **p, const char *end, uint64_t max, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (x > (max - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (s < end) {
		if (*s != ' ')
			return -EINVAL;
		s++;
	}
	*p = s;
	*v = x;
	return 0;
}

int live_parse_line(const char *s, size_t n, struct live_line *l)
{
	const char *p = s + 2, *end = s + n;
	uint64_t a = 0, b = 0, c = 0, seq, t;

	memset(l, 0, sizeof(*l));
	if (n < 2 || !strchr("enxt!um|", s[0]) || !s[0] || s[1] != ' ')
		return -EINVAL;
	l->op = s[0];
	if (field(&p, end, UINT32_MAX, &seq) || field(&p, end, UINT64_MAX, &t))
		return -EINVAL;
	l->seq = (uint32_t)seq;
	l->time_us = t;
	switch (l->op) {
	case 'm': {
		const char *c;
		int tabs = 0;

		/* escaped: one tab between key and value, no other control */
		for (c = p; c < end; c++) {
			if (*c == '\t')
				tabs++;
			else if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return -EINVAL;
		}
		if (tabs != 1)
			return -EINVAL;
		l->text = p;
		l->text_len = (size_t)(end - p);
		return 0;
	}
	case '|': {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		if (!sp || sp - p >= (long)sizeof(l->cause) || sp == p)
			return -EINVAL;
		memcpy(l->cause, p, (size_t)(sp - p));
		if (strcmp(l->cause, "break") && strcmp(l->cause, "gap") &&
		    strcmp(l->cause, "lost"))
			return -EINVAL;
		p = sp + 1;
		if (field(&p, end, UINT32_MAX, &a) ||
		    field(&p, end, UINT32_MAX, &b) || p != end)
			return -EINVAL;
		l->first = (uint32_t)a;
		l->count = (uint32_t)b;
		return 0;
	}
	default:
		break;
	}
	if (field(&p, end, UINT32_MAX, &a))
		return -EINVAL;
	l->method = (uint32_t)a;
	if (l->op == '!' || l->op == 'u') {
		if (field(&p, end, UINT32_MAX, &b))
			return -EINVAL;
		l->exception = (uint32_t)b;
	}
	if (l->op == '!') {
		if (field(&p, end, UINT16_MAX, &c))
			return -EINVAL;
		l->line = (uint32_t)c;
	}
	return p == end ? 0 : -EINVAL;
}

