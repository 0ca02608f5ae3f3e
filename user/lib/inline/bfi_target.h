/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_target: what the inline backend knows of one target, kept in the
 * registry (bfi_session.c) so that any tool, in any process, can read its
 * rings, change its mode, name its methods and undo its patches: bfctl
 * attach exits once the jumps are written.
 */
#ifndef BFI_TARGET_H
#define BFI_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../inline/bfi_layout.h"

/* A code area mapped near one object's text. */
struct bfi_code_area {
	uint64_t addr;		/* struct bfi_code */
	uint64_t size;		/* BFI_CODE_SIZE */
	uint64_t used;		/* bytes of text + stubs written */
};

/* One rewritten function. */
struct bfi_patch {
	uint64_t at;		/* where the jump is */
	uint64_t stub;		/* the stub's address */
	uint32_t len;		/* displaced bytes */
	uint32_t index;		/* the method's index in the area */
	uint8_t orig[16];	/* the bytes at [at, at + len) before */
	uint8_t live;		/* 1: the jump is written */
};

/* One method, as GET_METHODS reports it. */
struct bfi_method_rec {
	uint32_t id;
	uint32_t flags;		/* BFT_PF_*, BFT_PF_GONE once restored */
	uint64_t offset;	/* file offset, as attached */
	char *path;
	char *name;
};

struct bfi_target {
	uint32_t tgid;
	uint32_t index;		/* its block of streams: index * BFI_NSLOTS */
	uint64_t start;		/* the process's start time (bft_owner) */
	uint64_t pidns;
	/* the area, as mapped at attach: the geometry a reader trusts */
	uint64_t area;
	uint64_t area_size;
	uint32_t ring_size;
	uint32_t nslots;
	bool gone;		/* the process ended (not saved: found at load) */
	int64_t tid_off;	/* struct bfi_area.tid_off */
	uint32_t no_ret;	/* struct bfi_area.no_ret */
	struct bfi_code_area *codes;
	size_t ncodes;
	struct bfi_patch *patches;
	size_t npatches;
	struct bfi_method_rec *methods;	/* by index: methods[i] is index i */
	size_t nmethods;
};

void bfi_target_free(struct bfi_target *t);

#endif /* BFI_TARGET_H */
