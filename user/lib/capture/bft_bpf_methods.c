// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's method table (the bft_methods map) and hit counters, as
 * the module's kmod/bft_methods.c keeps them: a method is recorded at
 * attach, marked gone at detach, listed with its hits until the next start
 * forgets the gone ones; the control map's probe count follows it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

static int hits_map_fd(const struct bft_bpf *b, uint32_t method_id)
{
	return method_id < BFT_BPF_NEAR_IDS ? b->hits_fd : b->hits_far_fd;
}

/* Live probes: method entries not yet marked gone. */
size_t bft_bpf_probes_count(struct bft_bpf *b)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	size_t n = 0;

	if (!m)
		return 0;
	while (!bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(b->methods_fd, &k, m) &&
		    !(m->flags & BFT_PF_GONE))
			n++;
	}
	free(m);
	return n;
}

/* The table changed: the control map's count follows (under the lock). */
void bft_bpf_probes_recount(struct bft_bpf *b)
{
	struct bft_bpf_ctl ctl;

	if (!bft_bpf_ctl_read(b, &ctl)) {
		ctl.nr_probes = (uint32_t)bft_bpf_probes_count(b);
		bft_bpf_ctl_write(b, &ctl);
	}
}

int bft_bpf_method_record(struct bft_bpf *b, uint32_t tgid,
			  const struct bft_nl_probe *p, uint32_t link,
			  uint32_t slot)
{
	struct bft_bpf_method_key k = { tgid, p->method_id };
	struct bft_bpf_method *m = calloc(1, sizeof(*m));
	uint64_t *zeros = calloc(b->nr_cpus, sizeof(uint64_t));
	int err = 0;

	if (!m || !zeros) {
		err = -ENOMEM;
		goto out;
	}
	m->offset = p->offset;
	m->flags = p->flags;
	m->link = link;
	m->ref_ctr = p->ref_ctr_offset;
	m->slot = slot;
	snprintf(m->path, sizeof(m->path), "%s", p->path);
	snprintf(m->name, sizeof(m->name), "%s", p->name ? p->name : "");
	if (bpf_map_update_elem(b->methods_fd, &k, m, BPF_ANY))
		err = bft_bpf_err_set(b, -errno, "method table: %s",
				      strerror(errno));
	/*
	 * A hit count per method id, kept across detach until start
	 * (bft_bpf_methods_forget()); a far id's is made here.
	 */
	else if (p->method_id >= BFT_BPF_NEAR_IDS &&
		 bpf_map_update_elem(b->hits_far_fd, &p->method_id, zeros,
				     BPF_NOEXIST) && errno != EEXIST)
		err = bft_bpf_err_set(b, -errno, "hit counters: %s",
				      strerror(errno));
out:
	free(m);
	free(zeros);
	return err;
}

int bft_bpf_method_get(struct bft_bpf *b, uint32_t tgid, uint32_t id,
		       struct bft_bpf_method *m)
{
	struct bft_bpf_method_key k = { tgid, id };

	return bpf_map_lookup_elem(b->methods_fd, &k, m) ? -errno : 0;
}

int bft_bpf_method_put(struct bft_bpf *b, uint32_t tgid, uint32_t id,
		       const struct bft_bpf_method *m)
{
	struct bft_bpf_method_key k = { tgid, id };

	if (bpf_map_update_elem(b->methods_fd, &k, m, BPF_EXIST))
		return bft_bpf_err_set(b, -errno, "method table: %s",
				       strerror(errno));
	return 0;
}

/* Mark the methods of tgid (0: all) detached, as the module keeps them. */
void bft_bpf_methods_retire(struct bft_bpf *b, uint32_t tgid)
{
	struct bft_bpf_method_key k, next, *prev = NULL, *keys = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	size_t n = 0, cap = 0;

	/*
	 * Keys first, updates after: an update replaces the element at the
	 * head of its bucket, so updating while walking can visit the same
	 * keys again and again (seen: a stop of 280 probes never ending).
	 */
	while (m && !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (tgid && k.tgid != tgid)
			continue;
		if (n == cap) {
			void *v = realloc(keys, (cap = cap * 2 + 64) * sizeof(*keys));

			if (!v)
				break;
			keys = v;
		}
		keys[n++] = k;
	}
	for (size_t i = 0; m && i < n; i++) {
		if (bpf_map_lookup_elem(b->methods_fd, &keys[i], m))
			continue;
		m->flags |= BFT_PF_GONE;
		bpf_map_update_elem(b->methods_fd, &keys[i], m, BPF_EXIST);
	}
	free(keys);
	free(m);
}

void bft_bpf_methods_forget(struct bft_bpf *b)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	uint64_t *zeros = calloc(b->nr_cpus, sizeof(uint64_t));

	while (m && zeros &&
	       !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		k = next;
		/* a forgotten id starts from zero when it is used again */
		bpf_map_update_elem(hits_map_fd(b, k.method_id), &k.method_id,
				    zeros, BPF_EXIST);
		if (!bpf_map_lookup_elem(b->methods_fd, &k, m) &&
		    (m->flags & BFT_PF_GONE)) {
			bpf_map_delete_elem(b->methods_fd, &k);
			continue;	/* the next key after a deleted one */
		}
		prev = &k;
	}
	free(m);
	free(zeros);
}

int bft_bpf_get_methods(struct bft_bpf *b, bft_nl_method_cb cb, void *arg)
{
	struct bft_bpf_method_key k, next, *prev = NULL;
	struct bft_bpf_method *m = malloc(sizeof(*m));
	uint64_t *hits = calloc(b->nr_cpus, sizeof(uint64_t));
	int ret = bft_bpf_session_open(b, false);

	if (ret) {
		ret = ret == -ENOENT ? 0 : ret;	/* no session: no methods */
		goto out;
	}
	if (!m || !hits) {
		ret = -ENOMEM;
		goto out;
	}
	while (!ret && !bpf_map_get_next_key(b->methods_fd, prev, &next)) {
		struct bft_nl_method nm;

		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(b->methods_fd, &k, m))
			continue;
		memset(&nm, 0, sizeof(nm));
		nm.tgid = k.tgid;
		nm.method_id = k.method_id;
		nm.path = m->path;
		nm.offset = m->offset;
		nm.flags = m->flags;
		nm.name = m->name;
		if (!bpf_map_lookup_elem(hits_map_fd(b, k.method_id),
					 &k.method_id, hits))
			for (unsigned int c = 0; c < b->nr_cpus; c++)
				nm.hits += hits[c];
		ret = cb(&nm, arg);
	}
out:
	free(m);
	free(hits);
	return ret < 0 ? ret : 0;
}
