// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's --output directory, the trace as .flow files: each
 * thread's thread-<tid>.flow, opened at its first event, and at the end
 * ids.properties (method signature = id) and threads (tid, tgid, name).
 * The events themselves are written where they pass, in pipeline.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"

/*
 * Files are made in the directory opened at the start: after --user, the
 * path to it may cross directories the new user cannot enter.
 */
static FILE *out_file(struct coll *c, const char *name)
{
	int fd = openat(c->outdir_fd, name, O_WRONLY | O_CREAT | O_TRUNC |
			O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (fd >= 0 && !f)
		close(fd);
	if (!f)
		coll_log("cannot write %s/%s: %s", c->o.outdir, name,
			 strerror(errno));
	return f;
}

void flow_file_open(struct coll *c, struct cthread *t)
{
	char name[64];

	bft_flow_filename(name, sizeof(name), t->tid);
	t->flow_file = out_file(c, name);
	if (!t->flow_file)
		return;
	bft_flow_writer_init_file(&t->flow, t->flow_file);
}

/* ids.properties keys may hold no '=', CR or LF, nor start with '#'. */
static void ids_key(const char *sig, char *out, size_t n)
{
	size_t o = 0;

	for (; *sig && o + 4 < n; sig++) {
		if (*sig == '=' || *sig == '%' || *sig == '\r' ||
		    *sig == '\n' || (o == 0 && *sig == '#'))
			o += (size_t)snprintf(out + o, n - o, "%%%02X",
					      (unsigned char)*sig);
		else
			out[o++] = *sig;
	}
	out[o] = 0;
}

int flow_files_finish(struct coll *c)
{
	char key[8192];
	uint32_t i;
	FILE *f;
	int err = 0;

	if (!c->o.outdir)
		return 0;
	for (i = 0; i < c->nthreads; i++) {
		struct cthread *t = c->threads[i];

		if (!t->flow_file)
			continue;
		if (bft_flow_writer_close(&t->flow))
			err = -EIO;
		if (fclose(t->flow_file))
			err = -EIO;
		t->flow_file = NULL;
	}
	f = out_file(c, "ids.properties");
	if (!f)
		return -errno;
	for (i = 0; i < c->methods.cap; i++) {
		struct method *m = &c->methods.v[i];

		if (!m->used || !m->sig)
			continue;
		ids_key(m->sig, key, sizeof(key));
		if (bft_ids_write(f, key, m->id))
			err = -EIO;
	}
	if (fclose(f))
		err = -EIO;
	f = out_file(c, "threads");
	if (!f)
		return -errno;
	fprintf(f, "# tid\ttgid\tname (each has its thread-<tid>.flow)\n");
	for (i = 0; i < c->nthreads; i++)
		fprintf(f, "%u\t%u\t%s\n", c->threads[i]->tid,
			c->threads[i]->tgid,
			c->threads[i]->name ? c->threads[i]->name : "");
	if (fclose(f))
		err = -EIO;
	if (err)
		coll_log("writing %s failed", c->o.outdir);
	return err;
}
