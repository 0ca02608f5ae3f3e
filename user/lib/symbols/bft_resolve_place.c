// SPDX-License-Identifier: GPL-2.0
/*
 * bft_resolve: each selected function's entry probe, moved off
 * single-step where bft_entry's rule allows.  See bft_resolve.h.
 *
 * Only the picks are placed, so an object is decoded only when one of its
 * selected functions could move.  A move needs the branch targets of the
 * whole object (a stripped library's static functions and hand-written
 * code such as glibc's string functions jump into other functions' first
 * instructions), so its executable sections are swept once, whatever the
 * symbols say.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/bft_entry.h"
#include "symbols/bft_resolve.h"
#include "symbols/bft_symclass.h"

struct placing {
	struct bft_entry *dec;
	const struct bft_object *o;
	int fd;
	struct bft_entry_targets targets;
	bool swept;
	uint8_t *buf;
	size_t cap;
};

/* Every direct branch target in the object's executable sections. */
static int sweep(struct placing *p)
{
	p->swept = true;
	return bft_entry_targets_sweep(p->dec, p->fd, &p->targets);
}

static bool is_hook(const struct bft_func *f)
{
	for (uint32_t i = 0; i < f->nnames; i++)
		if (bft_sym_hook(f->names[i].raw))
			return true;
	return false;
}

static int place_one(struct placing *p, struct bft_func *f)
{
	uint64_t off = 0;
	int rule;

	/* their handlers read rdi and rsi: the hooks' place stays put */
	if (is_hook(f)) {
		f->entry_rule = BFT_ENTRY_HOOK;
		return 0;
	}
	if (f->size > p->cap) {
		uint8_t *b = realloc(p->buf, f->size);

		if (!b)
			return -ENOMEM;
		p->buf = b;
		p->cap = f->size;
	}
	if (pread(p->fd, p->buf, f->size, (off_t)f->offset) != (ssize_t)f->size)
		return 0;	/* the endbr64 rule's place, read at load */
	rule = bft_entry_place(p->dec, p->buf, f->size, f->addr, NULL, &off);
	/* a move, or a place past endbr64: a branch from elsewhere could
	 * lead there too */
	if (rule == BFT_ENTRY_MOVED || (rule >= 0 && off)) {
		if (!p->swept) {
			int rc = sweep(p);

			if (rc == -ENOMEM)
				return rc;
		}
		rule = bft_entry_place(p->dec, p->buf, f->size, f->addr,
				       &p->targets, &off);
	}
	if (rule < 0)
		return rule;
	f->entry_rule = (unsigned char)rule;
	f->probe_offset = f->offset + off;
	return 0;
}

int bft_plan_place(struct bft_plan *pl, const struct bft_resolve_opts *opts)
{
	struct placing p = { .fd = -1 };
	int rc = 0;

	if (opts && opts->no_endbr)
		return 0;
	for (size_t i = 0; i < pl->npicks && !rc; i++) {
		const struct bft_pick *k = &pl->picks[i];
		struct bft_object *o = &pl->objs[k->obj];

		if (p.o != o) {
			if (p.fd >= 0)
				close(p.fd);
			bft_entry_targets_free(&p.targets);
			p.swept = false;
			p.o = o;
			p.fd = open(o->open_path, O_RDONLY | O_CLOEXEC);
		}
		if (p.fd < 0)
			continue;	/* gone since it was read: left as it was */
		if (!p.dec) {
			rc = bft_entry_open(&p.dec);
			if (rc)
				break;
		}
		rc = place_one(&p, &o->funcs[k->func]);
	}
	if (p.fd >= 0)
		close(p.fd);
	bft_entry_targets_free(&p.targets);
	bft_entry_close(p.dec);
	free(p.buf);
	return rc;
}
