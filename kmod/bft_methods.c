// SPDX-License-Identifier: GPL-2.0
/*
 * Methods of detached probes.  A collector names a method from the method
 * table while it drains the rings, and that is often after the target has
 * exited or tracing has stopped; so a probe's table entry outlives the
 * probe until the next start.  Under bft_lock.
 */
#include <linux/dcache.h>
#include <linux/slab.h>

#include "bft_internal.h"

LIST_HEAD(bft_retired);
static u32 bft_nr_retired;

void bft_method_retire(struct bft_probe *p, pid_t tgid, char *buf)
{
	struct bft_method *m, *old;
	char *path;

	if (bft_nr_retired >= BFT_MAX_RETIRED) {
		old = list_first_entry(&bft_retired, struct bft_method, node);
		list_del(&old->node);
		kfree(old);
		bft_nr_retired--;
	}
	path = d_path(&p->path, buf, BFT_PATH_MAX);
	if (IS_ERR(path))
		path = "";
	m = kmalloc(struct_size(m, strings, strlen(path) + strlen(p->name) + 2),
		    GFP_KERNEL);
	if (!m)
		return;		/* a name the collector shows as unknown */
	m->tgid = tgid;
	m->method_id = p->method_id;
	m->offset = p->offset;
	m->flags = p->flags | BFT_PF_GONE;
	m->hits = bft_probe_hits(p);
	m->path = m->strings;
	strcpy(m->path, path);
	m->name = m->path + strlen(path) + 1;
	strcpy(m->name, p->name);
	list_add_tail(&m->node, &bft_retired);
	bft_nr_retired++;
}

void bft_methods_forget(void)
{
	struct bft_method *m, *mn;

	list_for_each_entry_safe(m, mn, &bft_retired, node) {
		list_del(&m->node);
		kfree(m);
	}
	bft_nr_retired = 0;
}
