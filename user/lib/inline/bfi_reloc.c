// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_reloc: plan a function's rewrite, and build its stub (bfi_reloc.h).
 * The rules are an allow-list: an instruction moves as it is unless
 * Capstone puts it in a group whose meaning depends on where it runs
 * (jumps, calls, returns, interrupts, relative branches) or it names RIP;
 * of those, only a RIP-relative memory operand, a final relative jmp, jcc
 * or call, and a final call through a register or memory are rewritten.
 * A call moves as a push and a jump, which a CET shadow stack would not
 * see: under one (bfi_reloc_shstk), no call moves.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inline/bfi_reloc.h"

struct bfi_reloc {
	csh cs;
	cs_insn *insn;
	bool shstk;		/* the target runs with a CET shadow stack */
};

static const char *const refusal_names[BFI_REFUSE_NRULES] = {
	[BFI_REFUSE_NONE] = "rewritten",
	[BFI_REFUSE_SHORT] = "short",
	[BFI_REFUSE_UNDECODABLE] = "undecodable",
	[BFI_REFUSE_INSN] = "unmovable",
	[BFI_REFUSE_TARGET] = "branch-target",
	[BFI_REFUSE_INDIRECT] = "jump-table",
};

static const char *const refusal_whys[BFI_REFUSE_NRULES] = {
	[BFI_REFUSE_NONE] = "its first instructions can move into a stub",
	[BFI_REFUSE_SHORT] = "it is shorter than the 5-byte jump",
	[BFI_REFUSE_UNDECODABLE] = "its first bytes do not decode",
	[BFI_REFUSE_INSN] = "an instruction the jump covers cannot move",
	[BFI_REFUSE_TARGET] = "a branch lands inside the bytes the jump covers",
	/* parenthesised: one string, not two elements missing a comma */
	[BFI_REFUSE_INDIRECT] = ("it has a jump table, whose targets could "
				 "land inside the bytes the jump covers"),
};

const char *bfi_refusal_name(enum bfi_refusal r)
{
	return (unsigned int)r < BFI_REFUSE_NRULES ? refusal_names[r] : "?";
}

const char *bfi_refusal_why(enum bfi_refusal r)
{
	return (unsigned int)r < BFI_REFUSE_NRULES ? refusal_whys[r] :
	       "it cannot be rewritten";
}

int bfi_reloc_open(struct bfi_reloc **rp)
{
	struct bfi_reloc *r = calloc(1, sizeof(*r));

	*rp = NULL;
	if (!r)
		return -ENOMEM;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &r->cs) != CS_ERR_OK) {
		free(r);
		return -ENOMEM;
	}
	cs_option(r->cs, CS_OPT_DETAIL, CS_OPT_ON);
	r->insn = cs_malloc(r->cs);
	if (!r->insn) {
		cs_close(&r->cs);
		free(r);
		return -ENOMEM;
	}
	*rp = r;
	return 0;
}

void bfi_reloc_shstk(struct bfi_reloc *r, bool on)
{
	r->shstk = on;
}

void bfi_reloc_close(struct bfi_reloc *r)
{
	if (!r)
		return;
	cs_free(r->insn, 1);
	cs_close(&r->cs);
	free(r);
}

static bool reloc_in_group(csh cs, const cs_insn *in, int group)
{
	return cs_insn_group(cs, in, (uint8_t)group);
}

/* A jmp or jcc with an immediate (relative) target, and that target. */
static bool reloc_rel_branch(const cs_insn *in, uint64_t *target, bool *jcc)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	switch (in->id) {
	case X86_INS_JMP:
		*jcc = false;
		break;
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
	case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
		*jcc = true;
		break;
	default:		/* jrcxz, loop: no rel32 form */
		return false;
	}
	*target = (uint64_t)x->operands[0].imm;
	return true;
}

/* A memory operand based on base, or on anything for X86_REG_INVALID. */
static bool reloc_mem_operand(const cs_insn *in, x86_reg base)
{
	const cs_x86 *x = &in->detail->x86;

	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM &&
		    (base == X86_REG_INVALID || x->operands[i].mem.base == base))
			return true;
	return false;
}

static bool reloc_rip_operand(const cs_insn *in)
{
	return reloc_mem_operand(in, X86_REG_RIP);
}

/* A call with an immediate (relative) target, and that target. */
static bool reloc_rel_call(const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_CALL || x->op_count != 1 ||
	    x->operands[0].type != X86_OP_IMM)
		return false;
	*target = (uint64_t)x->operands[0].imm;
	return true;
}

/*
 * Where the ModRM byte of an indirect call (ff /2) is, past its prefixes
 * and REX, when the call can become a jmp (ff /4) that reaches the same
 * target after a push: a 64-bit call whose operand is a register or
 * memory addressed with 64-bit registers other than %rsp (which the push
 * moves) and %rip (which the move changes).  -1 otherwise.  (Memory just
 * below %rsp reached through another register would be read after the
 * push, not before: no compiler addresses the red zone so.)
 */
static int reloc_ind_call_modrm(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *op = &x->operands[0];
	int i;

	if (in->id != X86_INS_CALL || x->op_count != 1 || op->size != 8 ||
	    x->addr_size != 8)
		return -1;
	if (op->type == X86_OP_REG ? op->reg == X86_REG_RSP :
	    op->type != X86_OP_MEM || op->mem.base == X86_REG_RSP ||
	    op->mem.base == X86_REG_RIP || op->mem.index == X86_REG_RSP)
		return -1;
	for (i = 0; i + 1 < in->size; i++) {
		uint8_t b = in->bytes[i];

		if (b == 0xff)
			break;
		/*
		 * segment (3e: notrack), bnd or rep, REX; not 66, which AMD
		 * takes for a 16-bit call, nor 67 (a 32-bit address)
		 */
		if (!(b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e ||
		      b == 0x64 || b == 0x65 || b == 0xf2 || b == 0xf3 ||
		      (b & 0xf0) == 0x40))
			return -1;
	}
	if (i + 1 >= in->size || ((in->bytes[i + 1] >> 3) & 7) != 2)
		return -1;
	return i + 1;
}

/* Why one displaced instruction cannot move, or NULL. */
static const char *reloc_unmovable(struct bfi_reloc *r, const cs_insn *in,
				   bool last)
{
	uint64_t t;
	bool jcc;

	if (reloc_rel_branch(in, &t, &jcc))
		return last ? NULL : "a branch before the jump's end";
	/* the last one: its return address can be the original's */
	if (reloc_in_group(r->cs, in, X86_GRP_CALL) ||
	    reloc_rel_call(in, &t)) {
		if (r->shstk)
			return "a call, which cannot move under a CET shadow stack";
		if (!reloc_rel_call(in, &t) && reloc_ind_call_modrm(in) < 0)
			return "an indirect call that cannot become a jump";
		return last ? NULL : "a call before the jump's end";
	}
	if (reloc_in_group(r->cs, in, X86_GRP_JUMP) ||
	    reloc_in_group(r->cs, in, X86_GRP_BRANCH_RELATIVE))
		return "a branch that cannot be moved";
	/* a function's last instruction: it returns from the stub as well */
	if (reloc_in_group(r->cs, in, X86_GRP_RET) && in->id != X86_INS_IRET &&
	    in->id != X86_INS_IRETD && in->id != X86_INS_IRETQ)
		return last ? NULL : "a return before the jump's end";
	if (reloc_in_group(r->cs, in, X86_GRP_IRET))
		return "a return from an interrupt";
	if (reloc_in_group(r->cs, in, X86_GRP_INT) ||
	    in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER ||
	    in->id == X86_INS_UD2 || in->id == X86_INS_HLT ||
	    in->id == X86_INS_XBEGIN)
		return "a trap, system call or transaction";
	if (in->detail->x86.addr_size != 8 && reloc_mem_operand(in, X86_REG_INVALID))
		return "a 32-bit address (an address-size prefix)";
	if (reloc_rip_operand(in) && !in->detail->x86.encoding.disp_offset)
		return "a RIP-relative operand Capstone does not locate";
	return NULL;
}

/* A memory operand with an index register: a table's entry. */
static bool reloc_indexed(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM &&
		    x->operands[i].mem.index != X86_REG_INVALID)
			return true;
	return false;
}

/*
 * Whether the function has a jump table: a jmp through an indexed memory
 * operand (jmp *table(,%rax,8)), or a jmp through a register within a few
 * instructions of an indexed load (the position-independent form: movslq
 * (%rdx,%rax,4),%rax; add %rdx,%rax; jmp *%rax).  A table's targets are
 * case labels, which could be a loop head among the first instructions.
 * Other indirect jumps (a tail call through a pointer, the unwinder's jump
 * to a landing pad) go to other functions or past the code that computes
 * them, never into the first bytes, and do not refuse.
 */
static bool reloc_jump_table(struct bfi_reloc *r, const uint8_t *code,
			     size_t size, uint64_t addr)
{
	const uint8_t *p = code;
	uint64_t a = addr;
	int since_load = 99;

	while (size) {
		if (!cs_disasm_iter(r->cs, &p, &size, &a, r->insn)) {
			/* data or padding: step over one byte */
			p++;
			size--;
			a++;
			since_load = 99;
			continue;
		}
		since_load++;
		if (r->insn->id != X86_INS_JMP) {
			if (reloc_indexed(r->insn))
				since_load = 0;
			continue;
		}
		if (r->insn->detail->x86.op_count != 1 ||
		    r->insn->detail->x86.operands[0].type == X86_OP_IMM)
			continue;
		if (reloc_indexed(r->insn) || since_load <= 4)
			return true;
	}
	return false;
}

static bool reloc_target_inside(const struct bft_entry_targets *t,
				uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = t ? t->n : 0;

	/* the first target > lo (a branch to the jump itself is an entry) */
	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (t->v[m] <= lo)
			a = m + 1;
		else
			b = m;
	}
	return t && a < t->n && t->v[a] < hi;
}

int bfi_reloc_plan(struct bfi_reloc *r, const uint8_t *code, size_t size,
		   uint64_t addr, const struct bft_entry_targets *others,
		   struct bfi_plan *plan)
{
	static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t skip = size >= 4 && !memcmp(code, endbr64, 4) ? 4 : 0;
	const uint8_t *p = code + skip;
	size_t left = size - skip;
	uint64_t a = addr + skip;

	memset(plan, 0, sizeof(*plan));
	plan->func = addr;
	plan->at = addr + skip;
	if (left < BFI_JMP_LEN) {
		plan->why = BFI_REFUSE_SHORT;
		return 0;
	}
	while (plan->len < BFI_JMP_LEN) {
		uint64_t off = a - addr;
		const char *why;

		if (!cs_disasm_iter(r->cs, &p, &left, &a, r->insn)) {
			plan->why = BFI_REFUSE_UNDECODABLE;
			snprintf(plan->detail, sizeof(plan->detail), "at +%llu",
				 (unsigned long long)off);
			return 0;
		}
		plan->len += r->insn->size;
		plan->ninsn++;
		why = reloc_unmovable(r, r->insn, plan->len >= BFI_JMP_LEN);
		if (why) {
			plan->why = BFI_REFUSE_INSN;
			snprintf(plan->detail, sizeof(plan->detail),
				 "%s (%.12s %.40s) at +%llu", why,
				 r->insn->mnemonic, r->insn->op_str,
				 (unsigned long long)off);
			return 0;
		}
	}
	if (plan->len > BFI_DISPLACED_MAX) {
		plan->why = BFI_REFUSE_INSN;
		snprintf(plan->detail, sizeof(plan->detail),
			 "%u displaced bytes", plan->len);
		return 0;
	}
	memcpy(plan->orig, code + skip, plan->len);
	if (reloc_target_inside(others, plan->at, plan->at + plan->len)) {
		plan->why = BFI_REFUSE_TARGET;
		return 0;
	}
	if (reloc_jump_table(r, code, size, addr)) {
		plan->why = BFI_REFUSE_INDIRECT;
		return 0;
	}
	plan->why = BFI_REFUSE_NONE;
	return 0;
}

static int reloc_rel32(uint64_t from_end, uint64_t to, int32_t *out)
{
	int64_t d = (int64_t)(to - from_end);

	if (d < INT32_MIN || d > INT32_MAX)
		return -ERANGE;
	*out = (int32_t)d;
	return 0;
}

int bfi_stub_jump(uint64_t from, uint64_t to, uint8_t out[BFI_JMP_LEN])
{
	int32_t d;
	int rc = reloc_rel32(from + BFI_JMP_LEN, to, &d);

	if (rc)
		return rc;
	out[0] = 0xe9;
	memcpy(out + 1, &d, sizeof(d));
	return 0;
}

/*
 * The push of a call, as the original would make it: its return address
 * is the original next instruction, so the callee, unwinders and our own
 * exits see the function itself.  lea -8(%rsp),%rsp; movl $lo,(%rsp);
 * movl $hi,4(%rsp): no register, no flag changed.  20 bytes.
 */
static size_t reloc_push_return(const cs_insn *in, uint8_t *buf)
{
	uint64_t next = in->address + in->size;
	uint32_t lo = (uint32_t)next, hi = (uint32_t)(next >> 32);
	static const uint8_t lea[5] = { 0x48, 0x8d, 0x64, 0x24, 0xf8 };

	memcpy(buf, lea, sizeof(lea));
	buf[5] = 0xc7;
	buf[6] = 0x04;
	buf[7] = 0x24;
	memcpy(buf + 8, &lo, 4);
	buf[12] = 0xc7;
	buf[13] = 0x44;
	buf[14] = 0x24;
	buf[15] = 0x04;
	memcpy(buf + 16, &hi, 4);
	return 20;
}

/* One displaced instruction, moved from its place to buf at b. */
static int reloc_move(const cs_insn *in, uint64_t b, uint8_t *buf,
		      size_t *n)
{
	const cs_x86 *x = &in->detail->x86;
	uint64_t t;
	int32_t d = 0;
	size_t k;
	bool jcc;
	int rc, m;

	if (reloc_rel_call(in, &t)) {
		k = reloc_push_return(in, buf);
		rc = reloc_rel32(b + k + 5, t, &d);
		buf[k] = 0xe9;
		memcpy(buf + k + 1, &d, sizeof(d));
		*n = k + 5;
		return rc;
	}
	m = reloc_ind_call_modrm(in);
	if (m >= 0) {
		/* the same bytes as a jmp: ff /2 becomes ff /4 */
		k = reloc_push_return(in, buf);
		memcpy(buf + k, in->bytes, in->size);
		buf[k + m] = (uint8_t)((buf[k + m] & ~0x38) | (4 << 3));
		*n = k + in->size;
		return 0;
	}
	if (reloc_rel_branch(in, &t, &jcc)) {
		uint8_t op = x->opcode[0] == 0x0f ? x->opcode[1] : x->opcode[0];

		if (!jcc) {
			rc = reloc_rel32(b + 5, t, &d);
			buf[0] = 0xe9;
			memcpy(buf + 1, &d, sizeof(d));
			*n = 5;
			return rc;
		}
		/* the condition is the low nibble of 7x or 0f 8x */
		rc = reloc_rel32(b + 6, t, &d);
		buf[0] = 0x0f;
		buf[1] = (uint8_t)(0x80 | (op & 0x0f));
		memcpy(buf + 2, &d, sizeof(d));
		*n = 6;
		return rc;
	}
	memcpy(buf, in->bytes, in->size);
	*n = in->size;
	if (reloc_rip_operand(in)) {
		uint8_t at = x->encoding.disp_offset;
		int32_t old;
		int64_t nd;

		if (!at || at + 4u > in->size)
			return -EINVAL;
		memcpy(&old, in->bytes + at, sizeof(old));
		/* same target: in->address + size + old = b + size + new */
		nd = (int64_t)old + (int64_t)(in->address - b);
		if (nd < INT32_MIN || nd > INT32_MAX)
			return -ERANGE;
		d = (int32_t)nd;
		memcpy(buf + at, &d, sizeof(d));
	}
	return 0;
}

int bfi_stub_build(struct bfi_reloc *r, const struct bfi_plan *plan,
		   uint64_t stub, uint32_t index, uint64_t enter, uint8_t *buf,
		   size_t cap, size_t *len)
{
	const uint8_t *p = plan->orig;
	size_t left = plan->len, n = 0, k;
	uint64_t a = plan->at;
	bool tail_jmp = false;
	int32_t d;
	int rc;

	if (plan->why != BFI_REFUSE_NONE || plan->len > BFI_DISPLACED_MAX ||
	    cap < BFI_STUB_MAX)
		return -EINVAL;
	/* mov $index, %r11d */
	buf[n++] = 0x41;
	buf[n++] = 0xbb;
	memcpy(buf + n, &index, sizeof(index));
	n += 4;
	/* call enter */
	rc = reloc_rel32(stub + n + 5, enter, &d);
	if (rc)
		return rc;
	buf[n++] = 0xe8;
	memcpy(buf + n, &d, sizeof(d));
	n += 4;
	while (left) {
		if (!cs_disasm_iter(r->cs, &p, &left, &a, r->insn))
			return -EINVAL;
		if (n + 40 > cap)
			return -EINVAL;
		rc = reloc_move(r->insn, stub + n, buf + n, &k);
		if (rc)
			return rc;
		n += k;
		/* a jmp, a ret, or a call that returns into the function */
		tail_jmp = r->insn->id == X86_INS_JMP ||
			   r->insn->id == X86_INS_CALL ||
			   cs_insn_group(r->cs, r->insn, X86_GRP_RET);
	}
	if (!tail_jmp) {
		if (n + BFI_JMP_LEN > cap)
			return -EINVAL;
		rc = bfi_stub_jump(stub + n, plan->at + plan->len, buf + n);
		if (rc)
			return rc;
		n += BFI_JMP_LEN;
	}
	*len = n;
	return 0;
}
