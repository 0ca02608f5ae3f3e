// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's reader (bfi_rings.h) against a hostile area.  The
 * harness registers itself as the target (a temporary registry) with an
 * area of its own memory, and the input is a list of slot headers the
 * "target" writes: slot, head, tail, busy.  After each, one read.
 * Properties: no pread outside the area the registry recorded, no
 * callback with more than a ring's bytes, the stream numbers in range, and
 * the tail written back is the head just read or the one we had.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inline/bfi_rings.h"
#include "inline/bfi_session.h"
#include "fuzz.h"

#define RING	4096u
#define SLOTS	4u

static struct bfi_area *area;
static struct bfi_rings *rings;
static char dir[64];

static void harness_pread(uint32_t tgid, uint64_t addr, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)area;

	(void)tgid;
	if (addr < a || len > BFI_AREA_SIZE(RING) ||
	    addr - a > BFI_AREA_SIZE(RING) - len)
		fuzz_fail("pread of %zu bytes at %#llx, outside the area",
			  len, (unsigned long long)addr);
}

static int harness_bytes(unsigned int stream, const void *d, size_t len,
			 void *arg)
{
	(void)d;
	(void)arg;
	if (len > RING || stream >= BFI_STREAMS)
		fuzz_fail("stream %u got %zu bytes", stream, len);
	return 0;
}

static int harness_idle(unsigned int stream, uint64_t until, void *arg)
{
	(void)until;
	(void)arg;
	if (stream >= BFI_STREAMS)
		fuzz_fail("idle stream %u", stream);
	return 0;
}

static void harness_cleanup(void)
{
	static const char *const names[] = { "session", "lock", "reader",
					     NULL };
	char p[128];

	bfi_rings_close(rings);
	for (int i = 0; names[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/%d", dir, (int)getpid());
	unlink(p);
	rmdir(dir);
}

static void harness_init(void)
{
	struct bfi_session *s;
	struct bfi_target t = { 0 };
	struct bft_owner me;
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/bfi-fuzz-XXXXXX");
	area = mmap(NULL, BFI_AREA_SIZE(RING), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED || !mkdtemp(dir) || bft_owner_self(&me))
		abort();
	setenv("BFT_INLINE_DIR", dir, 1);
	area->magic = BFI_MAGIC;
	area->nslots = SLOTS;
	area->ring_size = RING;
	t.tgid = me.tgid;
	t.start = me.start;
	t.pidns = me.pidns;
	t.area = (uint64_t)(uintptr_t)area;
	t.area_size = BFI_AREA_SIZE(RING);
	t.ring_size = RING;
	t.nslots = SLOTS;
	if (bfi_session_open(&s, true, err, sizeof(err)) ||
	    bfi_session_lock(s) || bfi_session_target_save(s, &t))
		abort();
	bfi_session_unlock(s);
	bfi_session_close(s);
	if (bfi_rings_open(&rings, harness_bytes, harness_idle, NULL, err,
			   sizeof(err)))
		abort();
	bfi_rings_pread_hook = harness_pread;
	atexit(harness_cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct {
		uint8_t slot;
		uint64_t head, tail;
		uint32_t busy;
	} __attribute__((packed)) op;

	if (!area)
		harness_init();
	while (size >= sizeof(op)) {
		struct bfi_slot *sl;
		uint64_t before;
		ssize_t n;

		memcpy(&op, data, sizeof(op));
		data += sizeof(op);
		size -= sizeof(op);
		sl = (void *)((char *)area + BFI_SLOTS_OFF +
			      (op.slot % SLOTS) * BFI_SLOT_SIZE(RING));
		sl->head = op.head;
		sl->busy = op.busy;
		if (op.slot & 0x80)
			sl->tail = op.tail;	/* a tail we did not write */
		before = sl->tail;
		n = bfi_rings_read(rings);
		if (n < 0 || n > (ssize_t)(SLOTS * RING))
			fuzz_fail("a read gave %zd", n);
		if (sl->tail != before && sl->tail != sl->head)
			fuzz_fail("tail %llu is neither ours nor the head",
				  (unsigned long long)sl->tail);
	}
	return 0;
}
