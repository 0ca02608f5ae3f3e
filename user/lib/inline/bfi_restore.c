// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_restore: undo what bfi_patch_apply did to a target.  The original
 * bytes go back only where the memory still holds our jump and the
 * process is still the one patched; every return a
 * thread owes through exit_common is paid back into its stack slot while
 * the world is stopped clear of the recorder, so no thread needs the
 * recorder again once it runs (docs/inline-probes.md, "Stop and detach").
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline/bfi_apply.h"
#include "inline/bfi_proc.h"
#include "inline/bfi_ptrace.h"
#include "inline/bfi_rec_blob.h"
#include "inline/bfi_reloc.h"

/* Whether v is the exit_common of one of t's code areas. */
static bool restore_is_exit(const struct bfi_target *t, uint64_t v)
{
	const struct bfi_rec_hdr *h = (const struct bfi_rec_hdr *)bfi_rec_bin;

	for (size_t i = 0; i < t->ncodes; i++)
		if (v == t->codes[i].addr + BFI_TEXT_OFF + h->exit_off)
			return true;
	return false;
}

/* Put a real return address back where the slot still holds exit_common. */
static void restore_frame(struct bfi_world *w, const struct bfi_target *t,
			  const struct bfi_frame *fr)
{
	uint64_t v;

	if (bfi_mem_read(w, fr->slot, &v, sizeof(v)) || !restore_is_exit(t, v))
		return;
	bfi_mem_write(w, fr->slot, &fr->ret, sizeof(fr->ret));
}

/* Every return that slot s's thread owes, paid; its stacks emptied. */
static int restore_slot(struct bfi_world *w, const struct bfi_target *t,
			uint32_t s)
{
	uint64_t base = t->area + BFI_SLOTS_OFF + s * BFI_SLOT_SIZE(t->ring_size);
	struct bfi_slot sl;
	struct bfi_frame fr;
	uint32_t depth, nev, zero = 0;
	int rc;

	rc = bfi_mem_read(w, base, &sl, sizeof(sl));
	if (rc)
		return rc;
	if (!sl.tp)
		return 0;
	/* the target's own numbers, bounded by ours */
	depth = sl.depth < BFI_SHADOW_DEPTH ? sl.depth : BFI_SHADOW_DEPTH;
	nev = sl.nevicted < BFI_EVICTED ? sl.nevicted : BFI_EVICTED;
	for (uint32_t i = 0; i < depth; i++) {
		if (bfi_mem_read(w, base + BFI_SHADOW_OFF + i * sizeof(fr), &fr,
				 sizeof(fr)))
			break;
		restore_frame(w, t, &fr);
	}
	for (uint32_t i = 0; i < nev; i++)
		restore_frame(w, t, &sl.evicted[i]);
	rc = bfi_mem_write(w, base + offsetof(struct bfi_slot, depth), &zero,
			   sizeof(zero));
	if (!rc)
		rc = bfi_mem_write(w, base + offsetof(struct bfi_slot, nevicted),
				   &zero, sizeof(zero));
	return rc;
}

int bfi_patch_restore(struct bfi_target *t, uint64_t ctl,
		      int (*save)(void *arg, struct bfi_target *t),
		      void *arg, char *err, size_t errlen)
{
	const struct bfi_rec_hdr *h = (const struct bfi_rec_hdr *)bfi_rec_bin;
	uint64_t (*ranges)[2];
	struct bfi_proc_info pi;
	struct bfi_world *w = NULL;
	size_t nr = 0;
	int rc;

	if (!t->area)
		return 0;
	rc = bfi_proc_probe((pid_t)t->tgid, &pi, err, errlen);
	if (rc || pi.start != t->start) {
		/* gone, or not ours any more: nothing of it to undo */
		for (size_t i = 0; i < t->npatches; i++)
			t->patches[i].live = 0;
		return rc ? rc : -ESRCH;
	}
	ranges = calloc(t->npatches + t->ncodes + 1, sizeof(*ranges));
	if (!ranges)
		return -ENOMEM;
	for (size_t i = 0; i < t->npatches; i++) {
		if (!t->patches[i].live)
			continue;
		ranges[nr][0] = t->patches[i].at;
		ranges[nr++][1] = t->patches[i].at + 5;
	}
	/* a thread inside the recorder may be between two of its steps */
	for (size_t i = 0; i < t->ncodes; i++) {
		ranges[nr][0] = t->codes[i].addr + BFI_TEXT_OFF;
		ranges[nr++][1] = t->codes[i].addr + BFI_TEXT_OFF + h->size;
	}
	rc = bfi_world_stop_clear((pid_t)t->tgid,
				  (const uint64_t (*)[2])ranges, nr, &w, err,
				  errlen);
	free(ranges);
	if (rc)
		return rc;
	for (size_t i = 0; i < t->npatches && !rc; i++) {
		struct bfi_patch *pt = &t->patches[i];
		uint8_t jmp[5], now[5];

		if (!pt->live)
			continue;
		rc = bfi_stub_jump(pt->at, pt->stub, jmp);
		if (!rc)
			rc = bfi_mem_read(w, pt->at, now, sizeof(now));
		/* the program's own code since: not ours to change back */
		if (!rc && !memcmp(now, jmp, sizeof(jmp)))
			rc = bfi_mem_write(w, pt->at, pt->orig, sizeof(jmp));
		if (!rc) {
			pt->live = 0;
			if (pt->index < t->nmethods)
				t->methods[pt->index].flags |= BFT_PF_GONE;
		}
	}
	for (uint32_t s = 0; s < BFI_NSLOTS && !rc; s++)
		rc = restore_slot(w, t, s);
	if (!rc)
		rc = bfi_mem_write(w, t->area + BFI_LIVE_OFF, &ctl, sizeof(ctl));
	bfi_world_release(w);
	if (rc)
		snprintf(err, errlen, "restoring process %u: %s", t->tgid,
			 strerror(-rc));
	if (save) {
		int r2 = save(arg, t);

		if (!rc)
			rc = r2;
	}
	return rc;
}
