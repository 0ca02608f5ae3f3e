// SPDX-License-Identifier: GPL-2.0
/*
 * Methods of detached probes.  A collector names a method from the method
 * table while it drains the rings, and that is often after the target has
 * exited or tracing has stopped; so a probe's table entry outlives the
 * probe until the next start.  Under bft_lock.
 *
 * An entry keeps its file's name, not the file: a pinned dentry and mount
 * would make a container's unmount fail with EBUSY until the next start.
 * The name is resolved against the root of the controller that detaches or
 * stops, as a reader would resolve it.  The reaper, a kworker, has the
 * system's root, not a reader's (a chrooted reader would not know its
 * names): it pins the file instead, which is named by the reader until
 * the next detach or stop names it and lets it go.
 */
#include <linux/dcache.h>
#include <linux/path.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "bft_internal.h"

/* One per file name, shared by the consecutive entries of that file. */
struct bft_method_path {
	refcount_t ref;
	char s[];
};

LIST_HEAD(bft_retired);
static u32 bft_nr_retired;
static char bft_path_buf[BFT_PATH_MAX];	/* under bft_lock */

static void bft_method_free(struct bft_method *m)
{
	if (m->path && refcount_dec_and_test(&m->path->ref))
		kfree(m->path);
	path_put(&m->file);
	kfree(m);
}

/* @buf: BFT_PATH_MAX bytes, for a name resolved now, in the reader's root */
const char *bft_method_path(const struct bft_method *m, char *buf)
{
	char *s;

	if (m->path)
		return m->path->s;
	if (!m->file.dentry)
		return "";
	s = d_path(&m->file, buf, BFT_PATH_MAX);
	return IS_ERR(s) ? "" : s;
}

/* Whether this context has a root a reader would share. */
static bool bft_can_name(void)
{
	return current->fs && !(current->flags & PF_KTHREAD);
}

/*
 * The name is resolved now, against the root of whoever retires: the
 * controller for a stop or a detach, the system's root (that of the
 * kworkers, as d_absolute_path() would give, which modules cannot call)
 * for the reaper.  A path no root reaches, or a retire with no root (an
 * owner's socket released as it exits), gets its name within its mount.
 */
static struct bft_method_path *bft_method_path_of(const struct path *file,
						  struct bft_method_path *last)
{
	struct bft_method_path *mp;
	char *s;

	/* an exiting owner's socket closes after its fs is gone */
	s = current->fs ? d_path(file, bft_path_buf, sizeof(bft_path_buf)) :
	    ERR_PTR(-ENOENT);
	if (IS_ERR(s))
		s = dentry_path_raw(file->dentry, bft_path_buf,
				    sizeof(bft_path_buf));
	if (IS_ERR(s))
		return NULL;
	if (last && !strcmp(last->s, s)) {
		refcount_inc(&last->ref);
		return last;
	}
	mp = kmalloc(struct_size(mp, s, strlen(s) + 1), GFP_KERNEL);
	if (!mp)
		return NULL;
	refcount_set(&mp->ref, 1);
	strcpy(mp->s, s);
	return mp;
}

void bft_method_retire(struct bft_probe *p, pid_t tgid)
{
	struct bft_method *m, *old, *last;

	if (bft_nr_retired >= BFT_MAX_RETIRED) {
		old = list_first_entry(&bft_retired, struct bft_method, node);
		list_del(&old->node);
		bft_method_free(old);
		bft_nr_retired--;
	}
	m = kmalloc(struct_size(m, name, strlen(p->name) + 1), GFP_KERNEL);
	if (!m)
		return;		/* a name the collector shows as unknown */
	m->tgid = tgid;
	m->method_id = p->method_id;
	m->offset = p->offset;
	m->flags = p->flags | BFT_PF_GONE;
	m->hits = bft_probe_hits(p);
	m->path = NULL;
	m->file = (struct path){};
	if (bft_can_name()) {
		last = list_empty(&bft_retired) ? NULL :
		       list_last_entry(&bft_retired, struct bft_method, node);
		/* NULL: an empty name */
		m->path = bft_method_path_of(&p->path, last ? last->path : NULL);
	} else {
		m->file = p->path;
		path_get(&m->file);
	}
	strcpy(m->name, p->name);
	list_add_tail(&m->node, &bft_retired);
	bft_nr_retired++;
}

/* At a detach or a stop: name what the reaper pinned, and let it go. */
void bft_methods_name(void)
{
	struct bft_method_path *prev = NULL;
	struct bft_method *m;

	if (!bft_can_name())
		return;
	list_for_each_entry(m, &bft_retired, node) {
		if (!m->file.dentry) {
			prev = m->path;
			continue;
		}
		m->path = bft_method_path_of(&m->file, prev);
		path_put(&m->file);
		m->file = (struct path){};
		prev = m->path;
	}
}

void bft_methods_forget(void)
{
	struct bft_method *m, *mn;

	list_for_each_entry_safe(m, mn, &bft_retired, node) {
		list_del(&m->node);
		bft_method_free(m);
	}
	bft_nr_retired = 0;
}
