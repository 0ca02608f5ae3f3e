// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF backend's USDT probes (bftrace.h 2.4): the module's checks of a
 * BFT_PF_USDT probe (kmod/bft_attach.c), and the specs its program reads
 * at a hit (the bft_usdt map, struct bft_bpf_usdt), stored before its
 * link exists and freed with the target's links.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

int bft_bpf_usdt_check(struct bft_bpf *b, size_t i,
		       const struct bft_nl_probe *p, uint64_t file_size)
{
	if (!(p->flags & BFT_PF_USDT)) {
		if (p->nargs || p->args || p->ref_ctr_offset)
			return bft_bpf_err_set(b, -EINVAL, "probe %zu: "
					       "arguments or a semaphore need "
					       "BFT_PF_USDT", i);
		return 0;
	}
	/* a MARK has no frame for an ENTER, an EXIT or a hook to belong to */
	if (p->flags != BFT_PF_USDT)
		return bft_bpf_err_set(b, -EINVAL, "probe %zu: BFT_PF_USDT "
				       "takes no other flag (flags %#x)", i,
				       p->flags);
	if (p->nargs > BFT_USDT_MAX_ARGS || (p->nargs && !p->args))
		return bft_bpf_err_set(b, -EINVAL, "probe %zu: %u arguments: "
				       "not 0 to %u entries", i, p->nargs,
				       BFT_USDT_MAX_ARGS);
	for (uint32_t k = 0; k < p->nargs; k++) {
		const char *why = bft_usdt_arg_bad(&p->args[k]);

		if (why)
			return bft_bpf_err_set(b, -EINVAL, "probe %zu: "
					       "argument %u has a bad %s", i,
					       k, why);
	}
	/* the counter is two bytes long */
	if (p->ref_ctr_offset &&
	    (file_size < 2 || p->ref_ctr_offset > file_size - 2))
		return bft_bpf_err_set(b, -ERANGE, "probe %zu: semaphore "
				       "offset %#llx is past the end (%llu)",
				       i, (unsigned long long)p->ref_ctr_offset,
				       (unsigned long long)file_size);
	/* the perf-event uprobe takes it in config bits 32-63 */
	if (p->ref_ctr_offset >> 32 && !bft_bpf_multi(b))
		return bft_bpf_err_set(b, -ERANGE, "probe %zu: semaphore "
				       "offset %#llx does not fit 32 bits", i,
				       (unsigned long long)p->ref_ctr_offset);
	return 0;
}

/*
 * A free slot for a spec, from a start that spreads targets and ids
 * apart, so that a batch usually takes one update per probe.  Never 0,
 * which slots[] uses for "none".
 */
static int slot_take(struct bft_bpf *b, uint32_t tgid,
		     const struct bft_bpf_usdt *u, uint32_t *slot)
{
	uint32_t s = tgid * 2654435761u ^ u->method_id;

	for (uint32_t tries = 0; tries < 1u << 17; tries++, s++) {
		if (!s)
			continue;
		if (!bpf_map_update_elem(b->usdt_fd, &s, u, BPF_NOEXIST)) {
			*slot = s;
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	return bft_bpf_err_set(b, -errno, "storing a USDT probe: %s",
			       strerror(errno));
}

int bft_bpf_usdt_store(struct bft_bpf *b, uint32_t tgid,
		       const struct bft_nl_probe *probes, size_t n,
		       uint32_t *slots)
{
	struct bft_bpf_usdt u;

	for (size_t i = 0; i < n; i++) {
		const struct bft_nl_probe *p = &probes[i];
		int err;

		slots[i] = 0;
		if (!(p->flags & BFT_PF_USDT))
			continue;
		memset(&u, 0, sizeof(u));
		u.method_id = p->method_id;
		u.nargs = p->nargs;
		u.tgid = tgid;
		if (p->nargs)
			memcpy(u.args, p->args, p->nargs * sizeof(*p->args));
		err = slot_take(b, tgid, &u, &slots[i]);
		if (err) {
			bft_bpf_usdt_drop(b, slots, i);
			return err;
		}
	}
	return 0;
}

void bft_bpf_usdt_drop(struct bft_bpf *b, uint32_t *slots, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (slots[i])
			bpf_map_delete_elem(b->usdt_fd, &slots[i]);
		slots[i] = 0;
	}
}

void bft_bpf_usdt_release(struct bft_bpf *b, uint32_t tgid)
{
	uint32_t k, next, *prev = NULL, *keys = NULL;
	struct bft_bpf_usdt u;
	size_t n = 0, cap = 0;

	/* keys first: deleting while walking a hash restarts the walk */
	while (!bpf_map_get_next_key(b->usdt_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (bpf_map_lookup_elem(b->usdt_fd, &k, &u) ||
		    (tgid && u.tgid != tgid))
			continue;
		if (n == cap) {
			void *v = realloc(keys, (cap = cap * 2 + 64) *
					  sizeof(*keys));

			if (!v)
				break;
			keys = v;
		}
		keys[n++] = k;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(b->usdt_fd, &keys[i]);
	free(keys);
}
