// SPDX-License-Identifier: GPL-2.0
/*
 * mmap, mprotect, munmap and madvise run inside a stopped target
 * (bfi_remote.h), and where a code area near the target's text can go.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "inline/bfi_remote.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE	0x100000
#endif

#define PAGE		4096ull
/* The top of a 4-level x86-64 address space (TASK_SIZE). */
#define USER_TOP	0x7ffffffff000ull
/* Left free below a stack, which grows down into it. */
#define STACK_GAP	(256 * PAGE)
/* Placement tries before giving up (maps changing under us). */
#define ROUNDS		8

static int remote_call(struct bfi_world *w, long nr, long a0, long a1, long a2,
		       long a3, long a4, long a5, long *out, char *err,
		       size_t errlen)
{
	const long args[6] = { a0, a1, a2, a3, a4, a5 };
	long ret;
	int r = bfi_world_syscall(w, nr, args, &ret, err, errlen);

	if (r)
		return r;
	if (ret < 0 && ret >= -4095)
		return (int)ret;
	if (out)
		*out = ret;
	return 0;
}

struct remote_cand {
	uint64_t at, dist;
};

static int remote_cand_cmp(const void *a, const void *b)
{
	const struct remote_cand *x = a, *y = b;

	return x->dist < y->dist ? -1 : x->dist > y->dist;
}

static void remote_cand_add(struct remote_cand *c, size_t *n, size_t cap,
			    uint64_t g0, uint64_t g1, uint64_t lo, uint64_t hi,
			    uint64_t size)
{
	uint64_t at, top, bot;

	if (g1 <= g0 || g1 - g0 < size || *n == cap)
		return;
	at = g1 <= lo ? g1 - size : g0;
	bot = at < lo ? at : lo;
	top = at + size > hi ? at + size : hi;
	if (top - bot > BFI_NEAR_SPAN)
		return;
	c[*n].at = at;
	c[*n].dist = at < lo ? lo - at : at - hi;
	(*n)++;
}

/* Free gaps of the target near [lo, hi), nearest first. */
static int remote_gaps(pid_t pid, uint64_t lo, uint64_t hi, uint64_t size,
		       struct remote_cand *c, size_t cap, size_t *n)
{
	uint64_t prev = 0x10000;	/* mmap_min_addr's usual value */
	char path[64], line[512];
	FILE *f;

	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		uint64_t end;

		if (sscanf(line, "%llx-%llx", &a, &b) != 2 || a >= USER_TOP)
			continue;
		end = strstr(line, "[stack]") && a > STACK_GAP ? a - STACK_GAP : a;
		remote_cand_add(c, n, cap, prev, end, lo, hi, size);
		prev = b > prev ? b : prev;
	}
	fclose(f);
	remote_cand_add(c, n, cap, prev, USER_TOP, lo, hi, size);
	qsort(c, *n, sizeof(*c), remote_cand_cmp);
	return 0;
}

int bfi_remote_mmap(struct bfi_world *w, uint64_t near_lo, uint64_t near_hi,
		    uint64_t size, int prot, uint64_t *addr, char *err,
		    size_t errlen)
{
	struct remote_cand c[256];
	long got;
	size_t n;
	int r;

	size = (size + PAGE - 1) & ~(PAGE - 1);
	if (!near_lo && !near_hi) {
		r = remote_call(w, SYS_mmap, 0, (long)size, prot,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &got, err,
				errlen);
		if (!r)
			*addr = (uint64_t)got;
		else if (r != -EAGAIN && r != -ENOENT && r != -ESRCH)
			snprintf(err, errlen, "mmap of %llu bytes in process %d: %s",
				 (unsigned long long)size, bfi_world_tgid(w),
				 strerror(-r));
		return r;
	}
	for (int round = 0; round < ROUNDS; round++) {
		/* a live thread's maps: an exited leader has none */
		r = remote_gaps(bfi_world_tid(w, 0), near_lo, near_hi, size, c,
				sizeof(c) / sizeof(c[0]), &n);
		if (r)
			break;
		for (size_t i = 0; i < n; i++) {
			r = remote_call(w, SYS_mmap, (long)c[i].at, (long)size, prot,
					MAP_PRIVATE | MAP_ANONYMOUS |
					MAP_FIXED_NOREPLACE, -1, 0, &got, err,
					errlen);
			if (r == -EEXIST)
				break;		/* the maps changed: read them again */
			if (r == -EAGAIN || r == -ENOENT || r == -ESRCH ||
			    r == -ETIMEDOUT)
				return r;	/* the injection failed: err says */
			if (r)
				continue;
			if ((uint64_t)got == c[i].at) {
				*addr = (uint64_t)got;
				return 0;
			}
			/* a kernel before 4.17 took the address as a hint */
			remote_call(w, SYS_munmap, got, (long)size, 0, 0, 0, 0, NULL,
				    err, errlen);
		}
		if (r != -EEXIST)
			break;
	}
	snprintf(err, errlen,
		 "no free room of %llu bytes within 2 GiB of %#llx-%#llx in "
		 "process %d", (unsigned long long)size,
		 (unsigned long long)near_lo, (unsigned long long)near_hi,
		 bfi_world_tgid(w));
	return -ENOMEM;
}

int bfi_remote_mprotect(struct bfi_world *w, uint64_t addr, uint64_t size,
			int prot)
{
	return remote_call(w, SYS_mprotect, (long)addr, (long)size, prot, 0, 0,
			   0, NULL, NULL, 0);
}

int bfi_remote_munmap(struct bfi_world *w, uint64_t addr, uint64_t size)
{
	return remote_call(w, SYS_munmap, (long)addr, (long)size, 0, 0, 0, 0,
			   NULL, NULL, 0);
}

int bfi_remote_madvise(struct bfi_world *w, uint64_t addr, uint64_t size,
		       int advice)
{
	return remote_call(w, SYS_madvise, (long)addr, (long)size, advice, 0, 0,
			   0, NULL, NULL, 0);
}
