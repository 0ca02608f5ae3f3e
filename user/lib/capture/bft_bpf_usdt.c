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

static bool reg_ok(uint8_t reg, bool none_ok)
{
	return reg < BFT_USDT_NREGS || reg == BFT_USDT_SITE ||
	       (none_ok && reg == BFT_USDT_NOREG);
}

/* What makes a unevaluable, as the module names it; NULL if nothing. */
static const char *arg_bad(const struct bft_usdt_arg *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return "size";
	if (a->is_signed > 1)
		return "sign";
	if (a->pad)
		return "pad";
	switch (a->loc) {
	case BFT_USDT_CONST:
		if (a->base != BFT_USDT_NOREG || a->index != BFT_USDT_NOREG)
			return "register";
		break;
	case BFT_USDT_REG:
		if (!reg_ok(a->base, false) || a->index != BFT_USDT_NOREG)
			return "register";
		if (a->shift != 0 && a->shift != 8)
			return "shift";
		break;
	case BFT_USDT_MEM:
		if (!reg_ok(a->base, true) ||
		    (a->index != BFT_USDT_NOREG && a->index >= BFT_USDT_NREGS))
			return "register";
		if (a->scale != 1 && a->scale != 2 && a->scale != 4 &&
		    a->scale != 8)
			return "scale";
		break;
	default:
		return "loc";
	}
	if (a->loc != BFT_USDT_MEM && a->scale != 1)
		return "scale";
	if (a->loc != BFT_USDT_REG && a->shift)
		return "shift";
	return NULL;
}

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
		const char *why = arg_bad(&p->args[k]);

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
