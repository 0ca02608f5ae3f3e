// SPDX-License-Identifier: GPL-2.0
/*
 * Where records come from, and where mode commands go: collector.h's
 * source_* calls, each handed to the source's table (source.h).  Which
 * source there is was decided when it was opened: a live capture backend
 * (source_live.c) or the replay of stream files (source_replay.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

uint8_t source_mode(struct coll *c)
{
	return c->src->mode;
}

uint32_t source_ncpus(struct source *s)
{
	return s->ncpus;
}

bool source_is_kernel(const struct source *s)
{
	return s->ops->live;
}

const char *source_root_only(const struct source *s)
{
	return s->ops->root_only ? s->ops->root_only(s) : NULL;
}

int source_pollfds(struct source *s, struct pollfd *p, int max,
		   int *timeout_ms)
{
	return s->ops->pollfds(s, p, max, timeout_ms);
}

void source_woke(struct source *s, const struct pollfd *p, int n)
{
	if (s->ops->woke)
		s->ops->woke(s, p, n);
}

int source_read(struct coll *c)
{
	if (c->src->ended)
		return 1;
	return c->src->ops->read(c);
}

void source_drain(struct coll *c)
{
	c->src->draining = true;
}

int source_mode_cmd(struct coll *c, int cmd)
{
	return c->src->ops->mode_cmd(c, cmd);
}

int source_refresh_methods(struct coll *c)
{
	const struct source_ops *ops = c->src->ops;

	return ops->refresh_methods ? ops->refresh_methods(c) : 0;
}

int source_refresh_exceptions(struct coll *c)
{
	const struct source_ops *ops = c->src->ops;

	return ops->refresh_exceptions ? ops->refresh_exceptions(c) : 0;
}

void source_tick(struct coll *c)
{
	if (c->src->ops->tick)
		c->src->ops->tick(c);
}

void source_log_costs(struct coll *c)
{
	if (c->src->ops->log_costs)
		c->src->ops->log_costs(c);
}

bool source_targets_gone(struct coll *c)
{
	const struct source_ops *ops = c->src->ops;

	return ops->targets_gone && ops->targets_gone(c);
}

char *source_thread_name(struct coll *c, uint32_t tgid, uint32_t tid)
{
	return c->src->ops->thread_name(c, tgid, tid);
}

int source_stats(struct coll *c, struct source_stats *st)
{
	struct source *s = c->src;

	if (!s->reads) {
		s->reads = calloc(s->ncpus ? s->ncpus : 1, sizeof(*s->reads));
		if (!s->reads)
			return -ENOMEM;
	}
	memset(st->cpu, 0, s->ncpus * sizeof(*st->cpu));
	st->hits = st->lost = 0;
	return s->ops->stats(c, st);
}

void source_close(struct source *s)
{
	if (!s)
		return;
	free(s->reads);
	s->ops->close(s);
}
