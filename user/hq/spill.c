// SPDX-License-Identifier: GPL-2.0
/*
 * The spill file of a trace (spill.h): appended to, never rewritten; an
 * O_TMPFILE where the filesystem has it, else a named file unlinked at
 * once, so nothing is left behind whatever ends bfhq.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "spill.h"

uint64_t spill_bytes_total;

void spill_init(struct spill *s)
{
	s->fd = -1;
	s->size = 0;
	s->err = 0;
}

static int spill_open(struct spill *s, const char *dir)
{
	char path[4200];

	s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd >= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/.spill-XXXXXX", dir);
	s->fd = mkostemp(path, O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	unlink(path);
	return 0;
}

void spill_put(struct spill *s, const char *dir, struct spill_list *l,
	       struct bft_buf *b)
{
	size_t done = 0;

	if (!b->len || s->err)
		return;
	if (s->fd < 0 && (s->err = spill_open(s, dir)))
		return;
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 8;
		struct spill_piece *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			s->err = -ENOMEM;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	while (done < b->len) {
		ssize_t w = pwrite(s->fd, b->data + done, b->len - done,
				   (off_t)(s->size + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* what was written is past s->size: simply unused */
			s->err = w < 0 ? -errno : -EIO;
			return;
		}
		done += (size_t)w;
	}
	/* a piece right after the list's last one extends it */
	if (l->n && l->v[l->n - 1].off + l->v[l->n - 1].len == s->size)
		l->v[l->n - 1].len += b->len;
	else
		l->v[l->n++] = (struct spill_piece){ s->size, b->len };
	s->size += b->len;
	spill_bytes_total += b->len;
	b->len = 0;
}

int spill_copy(struct spill *s, const struct spill_list *l, FILE *out)
{
	char buf[65536];
	uint32_t i;

	for (i = 0; i < l->n; i++) {
		uint64_t off = l->v[i].off, end = off + l->v[i].len;

		while (off < end) {
			size_t want = end - off < sizeof(buf) ? end - off :
								 sizeof(buf);
			ssize_t r = pread(s->fd, buf, want, (off_t)off);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r < 0 ? -errno : -EIO;
			if (fwrite(buf, 1, (size_t)r, out) != (size_t)r)
				return -EIO;
			off += (uint64_t)r;
		}
	}
	return 0;
}

void spill_list_free(struct spill_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

void spill_close(struct spill *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
