// SPDX-License-Identifier: GPL-2.0
/*
 * bft_entry: the entry probe's place.  See bft_entry.h.
 *
 * Which instructions the kernel emulates is read from their bytes, the way
 * arch/x86/kernel/uprobes.c reads them; everything else (lengths, branch
 * targets, registers, memory operands) is capstone's decoding.
 */
#include "symbols/bft_entry.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

struct bft_entry {
	csh cs;
	cs_insn *insn;
};

static const char *const rule_names[BFT_ENTRY_NRULES] = {
	[BFT_ENTRY_AT_START] = "at_start",
	[BFT_ENTRY_MOVED] = "moved",
	[BFT_ENTRY_OFF] = "off",
	[BFT_ENTRY_HOOK] = "hook",
	[BFT_ENTRY_TARGET] = "target",
	[BFT_ENTRY_BRANCH] = "branch",
	[BFT_ENTRY_STACK] = "stack",
	[BFT_ENTRY_INDIRECT] = "indirect",
	[BFT_ENTRY_TOO_FAR] = "too_far",
	[BFT_ENTRY_END] = "end",
	[BFT_ENTRY_UNDECODABLE] = "undecodable",
};

static const char *const rule_whys[BFT_ENTRY_NRULES] = {
	[BFT_ENTRY_AT_START] = "the first instruction is emulated",
	[BFT_ENTRY_MOVED] = "moved past instructions that would be single-stepped",
	[BFT_ENTRY_OFF] = "placement turned off",
	[BFT_ENTRY_HOOK] = "an exception hook reads argument registers at entry",
	[BFT_ENTRY_TARGET] = "an instruction before the first emulated one is a branch target",
	[BFT_ENTRY_BRANCH] = "an instruction before the first emulated one branches",
	[BFT_ENTRY_STACK] = "an instruction before the first emulated one uses the stack",
	[BFT_ENTRY_INDIRECT] = "a jump table could lead back before the first emulated instruction",
	[BFT_ENTRY_TOO_FAR] = "no emulated instruction among the first ones",
	[BFT_ENTRY_END] = "the function ends before an emulated instruction",
	[BFT_ENTRY_UNDECODABLE] = "the function's bytes do not decode",
};

const char *bft_entry_rule_name(enum bft_entry_rule r)
{
	return (unsigned int)r < BFT_ENTRY_NRULES ? rule_names[r] : "?";
}

const char *bft_entry_rule_why(enum bft_entry_rule r)
{
	return (unsigned int)r < BFT_ENTRY_NRULES ? rule_whys[r] : "?";
}

int bft_entry_open(struct bft_entry **ep)
{
	struct bft_entry *e = calloc(1, sizeof(*e));

	*ep = NULL;
	if (!e)
		return -ENOMEM;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &e->cs) != CS_ERR_OK) {
		free(e);
		return -ENOMEM;
	}
	cs_option(e->cs, CS_OPT_DETAIL, CS_OPT_ON);
	e->insn = cs_malloc(e->cs);
	if (!e->insn) {
		cs_close(&e->cs);
		free(e);
		return -ENOMEM;
	}
	*ep = e;
	return 0;
}

void bft_entry_close(struct bft_entry *e)
{
	if (!e)
		return;
	cs_free(e->insn, 1);
	cs_close(&e->cs);
	free(e);
}

static bool in_group(const cs_insn *in, uint8_t g)
{
	for (uint8_t i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == g)
			return true;
	return false;
}

/* Does the kernel emulate it?  branch_setup_xol_ops, push_setup_xol_ops. */
static bool emulated(const cs_insn *in)
{
	const uint8_t *b = in->bytes;
	size_t n = in->size;

	if (n == 1 && b[0] == 0x90)
		return true;
	if ((n == 1 && b[0] >= 0x50 && b[0] <= 0x57) ||
	    (n == 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57))
		return true;
	/* bnd (f2) is the one prefix a relative branch may have */
	if (n > 1 && b[0] == 0xf2) {
		b++;
		n--;
	}
	return (n == 2 && (b[0] == 0xeb || (b[0] >= 0x70 && b[0] <= 0x7f))) ||
	       (n == 5 && (b[0] == 0xe9 || b[0] == 0xe8)) ||
	       (n == 6 && b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f);
}

static bool is_jump_or_call(const cs_insn *in)
{
	return in_group(in, CS_GRP_JUMP) || in_group(in, CS_GRP_CALL);
}

/* Its target, if it is a jump or call to an immediate address. */
static bool direct_target(const cs_insn *in, uint64_t *to)
{
	const cs_x86 *x = &in->detail->x86;

	if (!is_jump_or_call(in) || x->op_count != 1 ||
	    x->operands[0].type != X86_OP_IMM)
		return false;
	*to = (uint64_t)x->operands[0].imm;
	return true;
}

static bool indirect_jump(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return in_group(in, CS_GRP_JUMP) && x->op_count == 1 &&
	       x->operands[0].type != X86_OP_IMM;
}

static bool leaves_the_line(const cs_insn *in)
{
	switch (in->id) {
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_UD2:
	case X86_INS_HLT:
	case X86_INS_INT3:
		return true;
	}
	return is_jump_or_call(in) || in_group(in, CS_GRP_RET) ||
	       in_group(in, CS_GRP_IRET) || in_group(in, CS_GRP_INT);
}

static bool stack_reg(unsigned int r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP ||
	       r == X86_REG_SPL;
}

static bool frame_reg(unsigned int r)
{
	return stack_reg(r) || r == X86_REG_RBP || r == X86_REG_EBP;
}

static bool uses_stack(struct bft_entry *e, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	/* read and written, explicitly or not (push, pop, leave...) */
	if (cs_regs_access(e->cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return true;
	for (uint8_t i = 0; i < nrd; i++)
		if (stack_reg(rd[i]))
			return true;
	for (uint8_t i = 0; i < nwr; i++)
		if (stack_reg(wr[i]))
			return true;
	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM &&
		    (frame_reg(x->operands[i].mem.base) ||
		     frame_reg(x->operands[i].mem.index)))
			return true;
	return false;
}

static int targets_push(struct bft_entry_targets *t, uint64_t a)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		uint64_t *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = a;
	return 0;
}

int bft_entry_targets_add(struct bft_entry *e, struct bft_entry_targets *t,
			  const uint8_t *code, size_t size, uint64_t addr)
{
	const uint8_t *p = code;
	uint64_t a = addr, to;
	size_t left = size;

	/* capstone 4 knows endbr64, but be sure a CET start never stops us */
	if (size >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64))) {
		p += sizeof(endbr64);
		a += sizeof(endbr64);
		left -= sizeof(endbr64);
	}
	while (left) {
		/* one byte on: a linear sweep finds its feet again */
		if (!cs_disasm_iter(e->cs, &p, &left, &a, e->insn)) {
			t->undecodable++;
			p++;
			a++;
			left--;
			continue;
		}
		if (direct_target(e->insn, &to) && targets_push(t, to))
			return -ENOMEM;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void bft_entry_targets_sort(struct bft_entry_targets *t)
{
	size_t k = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), cmp_u64);
	for (size_t i = 1; i < t->n; i++)
		if (t->v[i] != t->v[k])
			t->v[++k] = t->v[i];
	t->n = k + 1;
}

void bft_entry_targets_free(struct bft_entry_targets *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static bool is_target(const struct bft_entry_targets *t, uint64_t a)
{
	size_t lo = 0, hi = t ? t->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid] == a)
			return true;
		if (t->v[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* What the function's own body says: its targets, an indirect jump. */
static int scan_body(struct bft_entry *e, const uint8_t *code, size_t size,
		     uint64_t addr, struct bft_entry_targets *own,
		     bool *indirect)
{
	const uint8_t *p = code;
	uint64_t a = addr, to;
	size_t left = size;

	*indirect = false;
	while (left) {
		if (!cs_disasm_iter(e->cs, &p, &left, &a, e->insn))
			return BFT_ENTRY_UNDECODABLE;
		if (direct_target(e->insn, &to) && targets_push(own, to))
			return -ENOMEM;
		*indirect |= indirect_jump(e->insn);
	}
	bft_entry_targets_sort(own);
	return 0;
}

static int walk(struct bft_entry *e, const uint8_t *code, size_t size,
		uint64_t addr, size_t skip, const struct bft_entry_targets *own,
		const struct bft_entry_targets *others, bool indirect,
		uint64_t *offset)
{
	const uint8_t *p = code + skip;
	uint64_t a = addr + skip;
	size_t left = size - skip;

	for (unsigned int i = 0; i <= BFT_ENTRY_MAX_WALK; i++) {
		uint64_t at = a;

		if (!left)
			return BFT_ENTRY_END;
		if (!cs_disasm_iter(e->cs, &p, &left, &a, e->insn))
			return BFT_ENTRY_UNDECODABLE;
		if (at != addr && (is_target(own, at) || is_target(others, at)))
			return BFT_ENTRY_TARGET;
		if (emulated(e->insn)) {
			if (!i)
				return BFT_ENTRY_AT_START;
			if (indirect && e->insn->id != X86_INS_PUSH)
				return BFT_ENTRY_INDIRECT;
			*offset = at - addr;
			return BFT_ENTRY_MOVED;
		}
		if (leaves_the_line(e->insn))
			return BFT_ENTRY_BRANCH;
		if (uses_stack(e, e->insn))
			return BFT_ENTRY_STACK;
	}
	return BFT_ENTRY_TOO_FAR;
}

int bft_entry_place(struct bft_entry *e, const uint8_t *code, size_t size,
		    uint64_t addr, const struct bft_entry_targets *others,
		    uint64_t *offset)
{
	struct bft_entry_targets own = { 0 };
	size_t skip = 0;
	bool indirect;
	int rc;

	if (size > sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)))
		skip = sizeof(endbr64);
	/* no endbr64 and an emulated start: no need to read further */
	if (!skip) {
		const uint8_t *p = code;
		uint64_t a = addr;
		size_t left = size;

		if (cs_disasm_iter(e->cs, &p, &left, &a, e->insn) &&
		    emulated(e->insn)) {
			*offset = 0;
			return BFT_ENTRY_AT_START;
		}
	}
	rc = scan_body(e, code + skip, size - skip, addr + skip, &own, &indirect);
	if (!rc)
		rc = walk(e, code, size, addr, skip, &own, others, indirect,
			  offset);
	/* refused: past the endbr64, unless a branch leads there */
	if (rc != BFT_ENTRY_MOVED && rc >= 0)
		*offset = skip && !is_target(&own, addr + skip) &&
			  !is_target(others, addr + skip) ? skip : 0;
	bft_entry_targets_free(&own);
	return rc;
}
