// SPDX-License-Identifier: GPL-2.0
/*
 * The speedscope writer (speedscope.h).  The file needs the frames
 * before the profiles and each thread's events together, but the trace
 * interleaves threads and names methods as it goes: so each thread's
 * events are kept as JSON text, spilled to disk past a few KiB (spill.c)
 * so that a long trace costs disk, not memory, and the file is written
 * whole at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "hq.h"
#include "intern.h"
#include "speedscope.h"
#include "spill.h"

#define SCHEMA		"https://www.speedscope.app/file-format-schema.json"
/* a thread's events held in memory at most, before they go to disk */
#define HELD_MAX	(64 * 1024)
#define PAGE		256
#define PAGES		(65536 / PAGE)

struct sthread {
	char *name;
	uint32_t *open;		/* frame indexes, innermost last */
	uint32_t depth, cap;
	uint64_t start, end;	/* the first and the last "at" */
	uint64_t events;
	struct bft_buf text;
	struct spill_list spilled;
};

struct speedscope {
	FILE *f;
	char dir[4096];
	int err;
	struct intern frames;
	struct spill spill;
	/* by 16-bit id, a page allocated with its first thread */
	struct sthread **pages[PAGES];
	uint16_t *order;	/* ids in order of their first event */
	uint32_t nthreads, order_cap;
};

static struct sthread *sthread_get(struct speedscope *s, uint16_t id)
{
	struct sthread ***page = &s->pages[id / PAGE], **slot;

	if (!*page && !(*page = calloc(PAGE, sizeof(**page))))
		return NULL;
	slot = &(*page)[id % PAGE];
	if (*slot)
		return *slot;
	if (s->nthreads == s->order_cap) {
		uint32_t cap = s->order_cap ? s->order_cap * 2 : 16;
		uint16_t *v = realloc(s->order, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->order = v;
		s->order_cap = cap;
	}
	*slot = calloc(1, sizeof(**slot));
	if (*slot)
		s->order[s->nthreads++] = id;
	return *slot;
}

struct speedscope *speedscope_open(const char *path, const char *dir)
{
	struct speedscope *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->f = fopen(path, "w");
	if (!s->f) {
		free(s);
		return NULL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	spill_init(&s->spill);
	return s;
}

void speedscope_thread(struct speedscope *s, uint16_t thread,
		       const char *name)
{
	struct sthread *th;
	char *copy;

	if (!s)
		return;
	th = sthread_get(s, thread);
	copy = strdup(name);
	if (!th || !copy) {
		free(copy);
		s->err = -ENOMEM;
		return;
	}
	free(th->name);
	th->name = copy;
}

/* An event; "at" never goes back, which speedscope would refuse. */
static void event(struct speedscope *s, struct sthread *th, char type,
		  uint32_t frame, uint64_t us)
{
	if (!th->events)
		th->start = us;
	else if (us < th->end)
		us = th->end;
	th->end = us;
	hq_bprintf(&th->text, "%s{\"type\":\"%c\",\"frame\":%" PRIu32
		   ",\"at\":%" PRIu64 "}", th->events ? ",\n" : "\n", type,
		   frame, us);
	th->events++;
	if (th->text.len > HELD_MAX && !s->spill.err)
		spill_put(&s->spill, s->dir, &th->spilled, &th->text);
}

void speedscope_begin(struct speedscope *s, uint16_t thread, uint64_t us,
		      const char *name)
{
	struct sthread *th;
	bool fresh;
	uint64_t id;

	if (!s)
		return;
	th = sthread_get(s, thread);
	id = intern_id(&s->frames, name, &fresh);
	if (!th || !id) {
		s->err = -ENOMEM;
		return;
	}
	if (th->depth == th->cap) {
		uint32_t cap = th->cap ? th->cap * 2 : 64;
		uint32_t *v = realloc(th->open, cap * sizeof(*v));

		if (!v) {
			s->err = -ENOMEM;
			return;
		}
		th->open = v;
		th->cap = cap;
	}
	th->open[th->depth++] = (uint32_t)(id - 1);
	event(s, th, 'O', (uint32_t)(id - 1), us);
}

void speedscope_end(struct speedscope *s, uint16_t thread, uint64_t us)
{
	struct sthread *th;

	if (!s)
		return;
	th = sthread_get(s, thread);
	/* an end whose begin was refused for want of memory: nothing open */
	if (th && th->depth)
		event(s, th, 'C', th->open[--th->depth], us);
}

static void put_file(const char *p, size_t n, void *arg)
{
	struct speedscope *s = arg;

	if (fwrite(p, 1, n, s->f) != n && !s->err)
		s->err = -EIO;
}

static void put_str(struct speedscope *s, const char *str)
{
	put_file(str, strlen(str), s);
}

static void put_json_string(struct speedscope *s, struct bft_buf *b,
			    const char *str)
{
	b->len = 0;
	hq_json_string(b, str);
	put_file((const char *)b->data, b->len, s);
}

static void write_profile(struct speedscope *s, struct sthread *th,
			  uint16_t id, bool first, struct bft_buf *tmp)
{
	char num[96];
	int err;

	while (th->depth)
		event(s, th, 'C', th->open[--th->depth], th->end);
	put_str(s, first ? "\n{\"type\":\"evented\",\"name\":" :
			   ",\n{\"type\":\"evented\",\"name\":");
	if (th->name) {
		put_json_string(s, tmp, th->name);
	} else {
		snprintf(num, sizeof(num), "\"thread %u\"", id);
		put_str(s, num);
	}
	snprintf(num, sizeof(num), ",\"unit\":\"microseconds\",\"startValue\":%"
		 PRIu64 ",\"endValue\":%" PRIu64 ",\"events\":[", th->start,
		 th->end);
	put_str(s, num);
	err = spill_copy(&s->spill, &th->spilled, s->f);
	if (err && !s->err)
		s->err = err;
	put_file((const char *)th->text.data, th->text.len, s);
	put_str(s, "\n]}");
}

int speedscope_close(struct speedscope *s)
{
	struct bft_buf tmp = { 0 };
	const char **frames;
	bool first = true;
	uint32_t i;
	int err;

	if (!s)
		return 0;
	frames = intern_by_id(&s->frames);
	if (!frames)
		s->err = -ENOMEM;
	put_str(s, "{\"$schema\":\"" SCHEMA "\",\n\"exporter\":\"bfhq\",\n"
		"\"shared\":{\"frames\":[");
	for (i = 0; frames && i < s->frames.count; i++) {
		put_str(s, i ? ",\n{\"name\":" : "\n{\"name\":");
		put_json_string(s, &tmp, frames[i]);
		put_str(s, "}");
	}
	put_str(s, "\n]},\n\"profiles\":[");
	/* a thread only named, with no call, has no profile: speedscope
	 * has nothing to draw for it */
	for (i = 0; i < s->nthreads; i++) {
		struct sthread *th = s->pages[s->order[i] / PAGE]
					     [s->order[i] % PAGE];

		if (!th->events)
			continue;
		write_profile(s, th, s->order[i], first, &tmp);
		first = false;
	}
	put_str(s, "\n]}\n");
	if (fclose(s->f) && !s->err)
		s->err = -errno;
	err = s->err;
	free(frames);
	bft_buf_free(&tmp);
	for (i = 0; i < s->nthreads; i++) {
		struct sthread *th = s->pages[s->order[i] / PAGE]
					     [s->order[i] % PAGE];

		free(th->name);
		free(th->open);
		bft_buf_free(&th->text);
		spill_list_free(&th->spilled);
		free(th);
	}
	for (i = 0; i < PAGES; i++)
		free(s->pages[i]);
	free(s->order);
	intern_free(&s->frames);
	spill_close(&s->spill);
	free(s);
	return err;
}
