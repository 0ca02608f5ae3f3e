// SPDX-License-Identifier: GPL-2.0
/*
 * The inline backend's relocation (bfi_reloc): hand-written x86-64
 * prologues, one per rule, with the plan each must get, and a stub whose
 * moved instructions must reach what the originals reached.  Real
 * execution is the selftests' (trace_test's inline variants).
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"

#include "inline/bfi_reloc.h"

#define BASE 0x401000ull

#define ENDBR	0xf3, 0x0f, 0x1e, 0xfa
#define PUSH_RBP	0x55
#define MOV_RSP_RBP	0x48, 0x89, 0xe5		/* mov %rsp,%rbp */
#define SUB_RSP	0x48, 0x83, 0xec, 0x10		/* sub $16,%rsp */
#define LEA_RIP	0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00 /* lea 0x10(%rip),%rax */
#define TEST_EDI	0x85, 0xff			/* test %edi,%edi */
#define JE_8	0x74, 0x08			/* je +8 */
#define CALL_0	0xe8, 0x00, 0x00, 0x00, 0x00	/* call next */
#define RET	0xc3
#define JMP_RAX	0xff, 0xe0			/* jmp *%rax */
#define MOVSLQ_TABLE	0x48, 0x63, 0x04, 0x82	/* movslq (%rdx,%rax,4),%rax */
#define ADD_RDX_RAX	0x48, 0x01, 0xd0		/* add %rdx,%rax */
#define CALL_RDI	0xff, 0xd7			/* call *%rdi */
#define CALL_R8	0x41, 0xff, 0xd0		/* call *%r8 */
#define CALL_RAX_8	0xff, 0x50, 0x08		/* call *8(%rax) */
#define CALL_RSP_AT	0xff, 0x14, 0x24		/* call *(%rsp) */
#define CALL_RIP_AT	0xff, 0x15, 0x10, 0x00, 0x00, 0x00 /* call *0x10(%rip) */
#define CALL_ESP_AT	0x67, 0xff, 0x14, 0x24		/* call *(%esp) */
#define CALL_DI	0x66, 0xff, 0xd7		/* callw *%di */

struct reloc_case {
	const char *name;
	const uint8_t *code;
	size_t size;
	enum bfi_refusal why;
	uint64_t at;		/* from BASE */
	uint32_t len;
};

#define CASE(n, w, a, l, ...)						\
	{ .name = n, .code = (const uint8_t[]){ __VA_ARGS__ },		\
	  .size = sizeof((const uint8_t[]){ __VA_ARGS__ }),		\
	  .why = w, .at = a, .len = l }

static const struct reloc_case cases[] = {
	CASE("push, mov, sub", BFI_REFUSE_NONE, 0, 8,
	     PUSH_RBP, MOV_RSP_RBP, SUB_RSP, RET),
	CASE("endbr64 then push, mov, sub", BFI_REFUSE_NONE, 4, 8,
	     ENDBR, PUSH_RBP, MOV_RSP_RBP, SUB_RSP, RET),
	CASE("a RIP-relative lea", BFI_REFUSE_NONE, 0, 7,
	     LEA_RIP, RET),
	CASE("test then a short je as the last", BFI_REFUSE_NONE, 0, 5,
	     PUSH_RBP, TEST_EDI, JE_8, RET, RET, RET, RET, RET, RET, RET, RET),
	CASE("a je before the jump ends", BFI_REFUSE_INSN, 0, 4,
	     TEST_EDI, JE_8, PUSH_RBP, RET, RET, RET, RET, RET, RET, RET, RET),
	CASE("a call as the last", BFI_REFUSE_NONE, 0, 6, PUSH_RBP, CALL_0,
	     RET),
	CASE("too short", BFI_REFUSE_SHORT, 0, 0, PUSH_RBP, RET),
	CASE("a ret as the last", BFI_REFUSE_NONE, 0, 5, TEST_EDI, TEST_EDI,
	     RET),
	CASE("a ret before the jump ends", BFI_REFUSE_INSN, 0, 3, TEST_EDI,
	     RET, RET, RET),
	CASE("endbr64 and too short", BFI_REFUSE_SHORT, 4, 0,
	     ENDBR, PUSH_RBP, RET),
	CASE("a tail call through a register", BFI_REFUSE_NONE, 0, 8,
	     PUSH_RBP, MOV_RSP_RBP, SUB_RSP, JMP_RAX),
	CASE("a jump table", BFI_REFUSE_INDIRECT, 0, 8,
	     PUSH_RBP, MOV_RSP_RBP, SUB_RSP, MOVSLQ_TABLE, ADD_RDX_RAX,
	     JMP_RAX),
	CASE("an indirect call as the last", BFI_REFUSE_NONE, 0, 6,
	     SUB_RSP, CALL_RDI, RET),
	CASE("an indirect call through memory as the last", BFI_REFUSE_NONE,
	     0, 7, SUB_RSP, CALL_RAX_8, RET),
	CASE("an indirect call before the jump ends", BFI_REFUSE_INSN, 0, 2,
	     CALL_RDI, SUB_RSP, RET),
	CASE("an indirect call through (%rsp)", BFI_REFUSE_INSN, 0, 7,
	     SUB_RSP, CALL_RSP_AT, RET),
	CASE("an indirect call through (%rip)", BFI_REFUSE_INSN, 0, 10,
	     SUB_RSP, CALL_RIP_AT, RET),
	CASE("an indirect call through a 32-bit address", BFI_REFUSE_INSN,
	     0, 8, SUB_RSP, CALL_ESP_AT, RET),
	CASE("a 16-bit indirect call", BFI_REFUSE_INSN, 0, 7,
	     SUB_RSP, CALL_DI, RET),
	/* push %es: invalid in 64-bit mode */
	CASE("undecodable", BFI_REFUSE_UNDECODABLE, 0, 0,
	     0x06, 0x06, 0x06, 0x06, 0x06, RET),
};

TEST(plans)
{
	struct bfi_reloc *r;

	ASSERT_EQ(0, bfi_reloc_open(&r));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct reloc_case *c = &cases[i];
		struct bfi_plan p;

		ASSERT_EQ(0, bfi_reloc_plan(r, c->code, c->size, BASE, NULL,
					    &p));
		EXPECT_EQ(c->why, p.why) TH_LOG("%s: %s (%s)", c->name,
						bfi_refusal_name(p.why),
						p.detail);
		EXPECT_EQ(BASE + c->at, p.at) TH_LOG("%s", c->name);
		if (c->why == BFI_REFUSE_NONE || c->why == BFI_REFUSE_INDIRECT)
			EXPECT_EQ(c->len, p.len) TH_LOG("%s", c->name);
	}
	bfi_reloc_close(r);
}

TEST(branch_target_inside_is_refused)
{
	const uint8_t code[] = { PUSH_RBP, MOV_RSP_RBP, SUB_RSP, RET };
	uint64_t v[] = { BASE, BASE + 1 };
	struct bft_entry_targets t = { .v = v, .n = 2, .cap = 2 };
	struct bfi_reloc *r;
	struct bfi_plan p;

	ASSERT_EQ(0, bfi_reloc_open(&r));
	ASSERT_EQ(0, bfi_reloc_plan(r, code, sizeof(code), BASE, &t, &p));
	EXPECT_EQ(BFI_REFUSE_TARGET, p.why);
	/* a branch to the first byte is a way in, not into the middle */
	t.n = 1;
	ASSERT_EQ(0, bfi_reloc_plan(r, code, sizeof(code), BASE, &t, &p));
	EXPECT_EQ(BFI_REFUSE_NONE, p.why);
	bfi_reloc_close(r);
}

/* tail: the stub ends in the moved instruction, with no jump back */
static void build(struct __test_metadata *_metadata, const uint8_t *code,
		  size_t size, uint64_t stub, uint8_t *buf, size_t *len,
		  bool tail)
{
	struct bfi_reloc *r;
	struct bfi_plan p;
	uint8_t far[BFI_STUB_MAX];
	size_t flen;
	int32_t d;

	ASSERT_EQ(0, bfi_reloc_open(&r));
	ASSERT_EQ(0, bfi_reloc_plan(r, code, size, BASE, NULL, &p));
	ASSERT_EQ(BFI_REFUSE_NONE, p.why);
	ASSERT_EQ(0, bfi_stub_build(r, &p, stub, 7, stub + 0x100, buf,
				    BFI_STUB_MAX, len));
	/* mov $7,%r11d; call enter */
	EXPECT_EQ(0x41, buf[0]);
	EXPECT_EQ(0xbb, buf[1]);
	EXPECT_EQ(7, buf[2]);
	EXPECT_EQ(0xe8, buf[6]);
	memcpy(&d, buf + 7, 4);
	EXPECT_EQ(stub + 0x100, stub + 11 + (uint64_t)(int64_t)d);
	/* a stub beyond rel32 reach of the code is refused */
	EXPECT_EQ(tail ? 0 : -ERANGE, bfi_stub_build(r, &p, BASE + (3ULL << 31), 7,
					  BASE + (3ULL << 31), far,
					  sizeof(far), &flen));
	bfi_reloc_close(r);
}

/* A moved lea reaches the address the original reached. */
TEST(stub_moves_rip_relative)
{
	const uint8_t code[] = { LEA_RIP, RET };
	const uint64_t stub = BASE + 0x10000000;
	uint8_t buf[BFI_STUB_MAX];
	size_t len;
	int32_t d;

	build(_metadata, code, sizeof(code), stub, buf, &len, false);
	EXPECT_EQ(0x48, buf[11]);
	memcpy(&d, buf + 14, 4);
	EXPECT_EQ(BASE + 7 + 0x10, stub + 11 + 7 + (uint64_t)(int64_t)d);
	EXPECT_EQ(0xe9, buf[18]);
	memcpy(&d, buf + 19, 4);
	EXPECT_EQ(BASE + 7, stub + 23 + (uint64_t)(int64_t)d);
	EXPECT_EQ(23, len);
}

/* A short je, moved, becomes a rel32 one to the same target. */
TEST(stub_moves_short_jcc)
{
	const uint8_t code[] = { PUSH_RBP, TEST_EDI, JE_8, RET, RET, RET,
				 RET, RET, RET, RET, RET };
	const uint64_t stub = BASE - 0x10000000;
	uint8_t buf[BFI_STUB_MAX];
	size_t len;
	int32_t d;

	build(_metadata, code, sizeof(code), stub, buf, &len, false);
	EXPECT_EQ(0x55, buf[11]);
	EXPECT_EQ(0x85, buf[12]);
	EXPECT_EQ(0x0f, buf[14]);
	EXPECT_EQ(0x84, buf[15]);
	memcpy(&d, buf + 16, 4);
	EXPECT_EQ(BASE + 5 + 8, stub + 20 + (uint64_t)(int64_t)d);
	EXPECT_EQ(0xe9, buf[20]);
	memcpy(&d, buf + 21, 4);
	EXPECT_EQ(BASE + 5, stub + 25 + (uint64_t)(int64_t)d);
	EXPECT_EQ(25, len);
}

/* A moved call returns into the function, not into the stub. */
TEST(stub_moves_call)
{
	const uint8_t code[] = { PUSH_RBP, CALL_0, RET };
	const uint64_t stub = BASE + 0x20000000;
	uint8_t buf[BFI_STUB_MAX];
	uint64_t ret;
	size_t len;
	int32_t d;

	build(_metadata, code, sizeof(code), stub, buf, &len, false);
	EXPECT_EQ(0x55, buf[11]);
	/* lea -8(%rsp),%rsp; movl lo; movl hi: the original next address */
	EXPECT_EQ(0x48, buf[12]);
	EXPECT_EQ(0xf8, buf[16]);
	memcpy(&ret, buf + 20, 4);
	memcpy((uint8_t *)&ret + 4, buf + 28, 4);
	EXPECT_EQ(BASE + 6, ret);
	EXPECT_EQ(0xe9, buf[32]);
	memcpy(&d, buf + 33, 4);
	EXPECT_EQ(BASE + 6, stub + 37 + (uint64_t)(int64_t)d);
	EXPECT_EQ(37, len);
}

/* Under a CET shadow stack no call moves: the push would not be its. */
TEST(shadow_stack_refuses_every_call)
{
	const uint8_t rel[] = { PUSH_RBP, CALL_0, RET };
	const uint8_t ind[] = { SUB_RSP, CALL_RDI, RET };
	const uint8_t none[] = { PUSH_RBP, MOV_RSP_RBP, SUB_RSP, RET };
	struct bfi_reloc *r;
	struct bfi_plan p;

	ASSERT_EQ(0, bfi_reloc_open(&r));
	bfi_reloc_shstk(r, true);
	ASSERT_EQ(0, bfi_reloc_plan(r, rel, sizeof(rel), BASE, NULL, &p));
	EXPECT_EQ(BFI_REFUSE_INSN, p.why);
	ASSERT_EQ(0, bfi_reloc_plan(r, ind, sizeof(ind), BASE, NULL, &p));
	EXPECT_EQ(BFI_REFUSE_INSN, p.why);
	ASSERT_EQ(0, bfi_reloc_plan(r, none, sizeof(none), BASE, NULL, &p));
	EXPECT_EQ(BFI_REFUSE_NONE, p.why);
	bfi_reloc_shstk(r, false);
	ASSERT_EQ(0, bfi_reloc_plan(r, ind, sizeof(ind), BASE, NULL, &p));
	EXPECT_EQ(BFI_REFUSE_NONE, p.why);
	bfi_reloc_close(r);
}

/* A moved indirect call: the same push, then a jmp through its operand. */
TEST(stub_moves_indirect_call)
{
	const uint8_t code[] = { SUB_RSP, CALL_R8, RET };
	const uint64_t stub = BASE + 0x20000000;
	uint8_t buf[BFI_STUB_MAX];
	uint64_t ret;
	size_t len;

	build(_metadata, code, sizeof(code), stub, buf, &len, true);
	EXPECT_EQ(0, memcmp(buf + 11, code, 4));
	EXPECT_EQ(0x48, buf[15]);
	memcpy(&ret, buf + 23, 4);
	memcpy((uint8_t *)&ret + 4, buf + 31, 4);
	EXPECT_EQ(BASE + 7, ret);
	/* jmp *%r8, and nothing after: the callee returns into the code */
	EXPECT_EQ(0x41, buf[35]);
	EXPECT_EQ(0xff, buf[36]);
	EXPECT_EQ(0xe0, buf[37]);
	EXPECT_EQ(38, len);
}

TEST_HARNESS_MAIN
