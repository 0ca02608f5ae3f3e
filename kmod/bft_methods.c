// SPDX-License-Identifier: GPL-2.0
/*
 * Methods of detached probes.  A collector names a method from the method
 * table while it drains the rings, and that is often after the target has
 * exited or tracing has stopped; so a probe's table entry outlives the
 * probe until the next start.  Under bft_lock.
 */
#include <linux/path.h>
#include <linux/slab.h>

#include "bft_internal.h"

LIST_HEAD(bft_retired);
static u32 bft_nr_retired;

static void bft_method_free(struct bft_method *m)
{
	path_put(&m->path);
	kfree(m);
}

void bft_method_retire(struct bft_probe *p, pid_t tgid)
{
	struct bft_method *m, *old;

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
	/*
	 * The path is resolved when the table is read, as a live probe's
	 * is: here we may run in the reaper, whose root is not the
	 * reader's, and the same file must get the same name.
	 */
	m->path = p->path;
	path_get(&m->path);
	strcpy(m->name, p->name);
	list_add_tail(&m->node, &bft_retired);
	bft_nr_retired++;
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
