// SPDX-License-Identifier: GPL-2.0
/*
 * The replay source (source.h): a directory of recorded or synthetic
 * streams: cpu0.bft, cpu1.bft, ... (one CPU stream each), "methods" (the
 * method table, methods.c) and optionally "threads" ("tgid\ttid\tname"
 * lines) and "exceptions" (the exception types, exceptions.c).  Mode
 * commands drive a small simulation of the kernel's modes (bftrace.h
 * section 1): nothing is read before start or while paused; records read
 * while suspended are dropped, and the suspension is a data break, as the
 * kernel's BREAK records are.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"

struct tname {
	uint32_t tgid, tid;
	char *name;
};

struct replay {
	struct source s;
	int *fd;
	bool *eof;
	/* a FIFO with nothing to read: the loop polls it, never reads it
	 * blocking (a stalled writer must not stop HQ's heartbeats) */
	bool *waiting;
	bool *fifo;
	uint64_t next_read_ms;
	struct tname *names;
	uint32_t nnames;
};

static struct replay *replay_of(struct source *s)
{
	return (struct replay *)s;
}

static const struct source_ops replay_ops;

static int replay_load_threads(struct replay *s, const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned int tgid, tid;
		int off = 0;
		struct tname *v;

		line[strcspn(line, "\r\n")] = 0;
		if (line[0] == '#' ||
		    sscanf(line, "%u\t%u\t%n", &tgid, &tid, &off) < 2 || !off)
			continue;
		v = realloc(s->names, (s->nnames + 1) * sizeof(*v));
		if (!v)
			break;
		s->names = v;
		v[s->nnames].tgid = tgid;
		v[s->nnames].tid = tid;
		v[s->nnames].name = strdup(line + off);
		s->nnames++;
	}
	free(line);
	fclose(f);
	return 0;
}

int source_open_replay(struct coll *c, char *err, size_t errlen)
{
	struct replay *s = calloc(1, sizeof(*s));
	struct stat st;
	char path[4200];
	uint32_t n;
	int e;

	if (!s)
		return -ENOMEM;
	s->s.ops = &replay_ops;
	c->src = &s->s;
	s->s.mode = BFT_MODE_INITIALIZING;
	for (n = 0;; n++) {
		snprintf(path, sizeof(path), "%s/cpu%u.bft", c->o.replay_dir, n);
		if (access(path, R_OK))
			break;
	}
	if (!n) {
		snprintf(err, errlen, "%s holds no cpu0.bft", c->o.replay_dir);
		return -ENOENT;
	}
	s->s.ncpus = n;
	s->fd = calloc(n, sizeof(*s->fd));
	s->eof = calloc(n, sizeof(*s->eof));
	s->waiting = calloc(n, sizeof(*s->waiting));
	s->fifo = calloc(n, sizeof(*s->fifo));
	if (!s->fd || !s->eof || !s->waiting || !s->fifo)
		return -ENOMEM;
	for (n = 0; n < s->s.ncpus; n++) {
		snprintf(path, sizeof(path), "%s/cpu%u.bft", c->o.replay_dir, n);
		/* non-blocking: a FIFO's open would wait for its writer */
		s->fd[n] = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (s->fd[n] < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -errno;
		}
		s->fifo[n] = !fstat(s->fd[n], &st) && S_ISFIFO(st.st_mode);
	}
	snprintf(path, sizeof(path), "%s/methods", c->o.replay_dir);
	e = methods_load_file(&c->methods, c->o.methods_file ?
				      c->o.methods_file : path);
	if (e) {
		snprintf(err, errlen, "bad method table");
		return e;
	}
	snprintf(path, sizeof(path), "%s/exceptions", c->o.replay_dir);
	e = exc_types_load_file(&c->exc, path);
	if (e) {
		snprintf(err, errlen, "bad exception table %s", path);
		return e;
	}
	snprintf(path, sizeof(path), "%s/threads", c->o.replay_dir);
	e = replay_load_threads(s, c->o.threads_file ? c->o.threads_file : path);
	if (e) {
		snprintf(err, errlen, "cannot read thread names: %s",
			 strerror(-e));
		return e;
	}
	return 0;
}

/*
 * The CPUs' chunks are fed a slice at a time, every CPU in turn, with a
 * merge after each turn: the merge then holds a few slices of records,
 * which stay in the cache, instead of a whole chunk of every CPU.  Its
 * output does not depend on how the input was cut, nor does what is sent:
 * the loop's other work comes after the read either way.
 */
#define REPLAY_SLICE	4096

static int replay_feed(struct coll *c, const uint8_t *buf, size_t *len)
{
	struct replay *s = replay_of(c->src);
	size_t chunk = c->o.replay_chunk, off;
	bool more = true, merge = true;
	uint32_t n;

	for (off = 0; more; off += REPLAY_SLICE) {
		more = false;
		for (n = 0; n < s->s.ncpus; n++) {
			size_t k = len[n] - off;
			int e;

			if (len[n] <= off)
				continue;
			if (k > REPLAY_SLICE)
				k = REPLAY_SLICE;
			e = bft_merge_feed(&c->merge, n, buf + n * chunk + off,
					   k);
			if (e == -EPROTO) {
				coll_log("cpu %u: %s", n,
					 bft_stream_last_error(
						 bft_merge_stream(&c->merge, n))
						 ->msg);
				len[n] = 0;	/* its decoder has stopped */
			} else if (e) {
				return e;
			}
			more |= len[n] > off + k;
		}
		/* a failed merge is the loop's to report, after the read */
		if (more && merge && pipeline_run(c))
			merge = false;
	}
	return 0;
}

/*
 * An empty FIFO reads 0 both before its writer came and after it left;
 * only the latter is its end, and poll tells it apart (POLLHUP).
 */
static bool replay_writer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static int replay_read(struct coll *c)
{
	struct replay *s = replay_of(c->src);
	size_t chunk = c->o.replay_chunk, *len;
	uint8_t *buf;
	uint32_t n, open = 0;
	uint64_t now = coll_now_ms();
	int err;

	if (now < s->next_read_ms)
		return 0;
	s->next_read_ms = now + c->o.replay_delay_ms;
	buf = malloc(s->s.ncpus * chunk);
	len = calloc(s->s.ncpus, sizeof(*len));
	if (!buf || !len) {
		free(buf);
		free(len);
		return -ENOMEM;
	}
	for (n = 0; n < s->s.ncpus; n++) {
		ssize_t r;

		if (s->eof[n])
			continue;
		r = read(s->fd[n], buf + n * chunk, chunk);
		s->waiting[n] = false;
		if (r > 0) {
			len[n] = (size_t)r;
			if (s->s.reads)
				s->s.reads[n]++;
			open++;
			continue;
		}
		if ((r < 0 && (errno == EAGAIN || errno == EINTR)) ||
		    (!r && s->fifo[n] && !replay_writer_gone(s->fd[n]))) {
			s->waiting[n] = true;
			open++;
			continue;
		}
		if (r < 0)
			coll_log("cpu %u: read: %s", n, strerror(errno));
		s->eof[n] = true;
		bft_merge_close(&c->merge, n);
	}
	err = replay_feed(c, buf, len);
	free(buf);
	free(len);
	if (err)
		return err;
	return open ? 0 : 1;
}

static int replay_pollfds(struct source *src, struct pollfd *p, int max,
			  int *timeout_ms)
{
	struct replay *s = replay_of(src);
	int n = 0;

	if (!s->s.ended && !s->s.draining &&
	    (s->s.mode == BFT_MODE_TRACING || s->s.mode == BFT_MODE_SUSPENDED)) {
		bool timer = false;
		uint32_t i;

		/* a waiting FIFO wakes us; files are read on the timer */
		for (i = 0; i < s->s.ncpus; i++) {
			if (s->eof[i])
				continue;
			if (s->waiting[i] && n < max)
				p[n++] = (struct pollfd){ .fd = s->fd[i],
							  .events = POLLIN };
			else
				timer = true;
		}
		if (timer)
			coll_wait_until(s->next_read_ms, timeout_ms);
		/* more FIFOs waiting than slots: look again soon */
		for (i = 0; i < s->s.ncpus && timer; i++)
			if (s->waiting[i] && !s->eof[i] &&
			    (*timeout_ms < 0 || *timeout_ms > 20))
				*timeout_ms = 20;
	}
	return n;
}

static int replay_read_step(struct coll *c)
{
	struct source *s = c->src;

	if (s->draining) {
		s->ended = true;
		return 1;
	}
	if (s->mode != BFT_MODE_TRACING && s->mode != BFT_MODE_SUSPENDED)
		return 0;
	if (replay_read(c) == 1) {
		s->ended = true;
		return 1;
	}
	return 0;
}

/* The kernel's mode rules (bftrace.h section 1), for replay. */
static int replay_mode_cmd(struct coll *c, int cmd)
{
	struct source *s = c->src;
	uint8_t m = s->mode, to;

	switch (cmd) {
	case BFT_CMD_START:
		if (m != BFT_MODE_INITIALIZING && m != BFT_MODE_SHUTTING_DOWN)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	case BFT_CMD_STOP:
		to = BFT_MODE_SHUTTING_DOWN;
		break;
	case BFT_CMD_PAUSE:
		if (m != BFT_MODE_TRACING)
			return -EINVAL;
		to = BFT_MODE_PAUSED;
		break;
	case BFT_CMD_UNPAUSE:
		if (m != BFT_MODE_PAUSED)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	case BFT_CMD_SUSPEND:
		if (m != BFT_MODE_TRACING)
			return -EINVAL;
		to = BFT_MODE_SUSPENDED;
		break;
	case BFT_CMD_UNSUSPEND:
		if (m != BFT_MODE_SUSPENDED)
			return -EINVAL;
		to = BFT_MODE_TRACING;
		break;
	default:
		return -EINVAL;
	}
	s->mode = to;
	/* set here, where the replay's mode changes: feeds emit too */
	c->replay_suspended = to == BFT_MODE_SUSPENDED;
	/* What the kernel's BREAK records do: stacks are void from here. */
	if (cmd == BFT_CMD_SUSPEND)
		pipeline_break(c);
	return 0;
}

static char *replay_thread_name(struct coll *c, uint32_t tgid, uint32_t tid)
{
	struct replay *s = replay_of(c->src);
	uint32_t i;

	for (i = 0; i < s->nnames; i++)
		if (s->names[i].tgid == tgid && s->names[i].tid == tid)
			return strdup(s->names[i].name);
	return NULL;
}

/* The streams tell what a ring would have held. */
static int replay_stats(struct coll *c, struct source_stats *st)
{
	struct source *s = c->src;
	uint32_t i;

	st->mode = s->mode;
	st->probes = c->methods.count;
	st->targets = 0;
	for (i = 0; i < s->ncpus; i++) {
		const struct bft_stream_stats *ss =
			bft_stream_stats(bft_merge_stream(&c->merge, i));

		st->cpu[i].records = ss->events;
		st->cpu[i].lost = ss->lost;
		st->cpu[i].reads = s->reads[i];
		st->hits += ss->events;
		st->lost += ss->lost;
	}
	return 0;
}

static void replay_close(struct source *src)
{
	struct replay *s = replay_of(src);
	uint32_t i;

	for (i = 0; s->fd && i < s->s.ncpus; i++)
		if (s->fd[i] > 0)
			close(s->fd[i]);
	free(s->fd);
	free(s->eof);
	free(s->waiting);
	free(s->fifo);
	for (i = 0; i < s->nnames; i++)
		free(s->names[i].name);
	free(s->names);
	free(s);
}

static const struct source_ops replay_ops = {
	.pollfds = replay_pollfds,
	.read = replay_read_step,
	.mode_cmd = replay_mode_cmd,
	.thread_name = replay_thread_name,
	.stats = replay_stats,
	.close = replay_close,
};
