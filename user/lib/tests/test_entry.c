// SPDX-License-Identifier: GPL-2.0
/*
 * The entry probe's place (bft_entry): hand-written x86-64 functions, one
 * per case of the rule, with the offset and the reason each must get.
 */
#include "kselftest_harness.h"

#include "symbols/bft_entry.h"

#define BASE 0x401000ull

#define ENDBR	0xf3, 0x0f, 0x1e, 0xfa
#define PUSH_RBP	0x55
#define PUSH_R12	0x41, 0x54
#define MOV_RDI_RAX	0x48, 0x89, 0xf8	/* mov %rdi,%rax */
#define TEST_RDI	0x48, 0x85, 0xff	/* test %rdi,%rdi */
#define XOR_EAX	0x31, 0xc0		/* xor %eax,%eax */
#define RET	0xc3

struct entry_case {
	const char *name;
	const uint8_t *code;
	size_t size;
	int rule;
	uint64_t offset;
};

#define CASE(n, r, off, ...)						\
	{ .name = n, .code = (const uint8_t[]){ __VA_ARGS__ },		\
	  .size = sizeof((const uint8_t[]){ __VA_ARGS__ }),		\
	  .rule = r, .offset = off }

static const struct entry_case cases[] = {
	CASE("push at the start", BFT_ENTRY_AT_START, 0,
	     PUSH_RBP, MOV_RDI_RAX, 0x5d, RET),
	CASE("endbr64 then push", BFT_ENTRY_AT_START, 4,
	     ENDBR, PUSH_RBP, MOV_RDI_RAX, 0x5d, RET),
	CASE("mov then push", BFT_ENTRY_MOVED, 3,
	     MOV_RDI_RAX, PUSH_R12, 0x41, 0x5c, RET),
	CASE("endbr64, mov, xor, push r12", BFT_ENTRY_MOVED, 9,
	     ENDBR, MOV_RDI_RAX, XOR_EAX, PUSH_R12, 0x41, 0x5c, RET),
	/* test %rdi; je +1: the je is the first emulated one */
	CASE("test then jcc", BFT_ENTRY_MOVED, 3,
	     TEST_RDI, 0x74, 0x01, RET, XOR_EAX, RET),
	/* mov; push rbp; ...; jne back to the push (offset 3) */
	CASE("a jcc in the function targets the push", BFT_ENTRY_TARGET, 0,
	     MOV_RDI_RAX, PUSH_RBP, 0x48, 0xff, 0xc8, 0x75, 0xfa, 0x5d, RET),
	/* mov; xor; push: a jmp back to the xor (offset 3) */
	CASE("a jmp targets an instruction on the way", BFT_ENTRY_TARGET, 0,
	     MOV_RDI_RAX, XOR_EAX, PUSH_RBP, 0x5d, 0xeb, 0xfa),
	CASE("sub %rsp before the push", BFT_ENTRY_STACK, 0,
	     0x48, 0x83, 0xec, 0x08, PUSH_RBP, 0x5d, RET),
	CASE("mov from (%rsp) before the push", BFT_ENTRY_STACK, 0,
	     0x48, 0x8b, 0x04, 0x24, PUSH_RBP, 0x5d, RET),
	CASE("mov to -8(%rbp) before the push", BFT_ENTRY_STACK, 0,
	     0x48, 0x89, 0x7d, 0xf8, PUSH_RBP, 0x5d, RET),
	CASE("lea from %rsp before the push", BFT_ENTRY_STACK, 0,
	     0x48, 0x8d, 0x44, 0x24, 0x08, PUSH_RBP, 0x5d, RET),
	CASE("pop before the push", BFT_ENTRY_STACK, 0,
	     0x58, PUSH_RBP, 0x5d, RET),
	/* jmp *%rax, then a push that is never the first emulated one */
	CASE("an indirect branch before", BFT_ENTRY_BRANCH, 0,
	     0xff, 0xe0, PUSH_RBP, RET),
	CASE("a ret before", BFT_ENTRY_BRANCH, 4,
	     ENDBR, RET, PUSH_RBP, RET),
	CASE("a syscall before", BFT_ENTRY_BRANCH, 0,
	     0x0f, 0x05, PUSH_RBP, RET),
	/* test; je +2; jmp *%rax; ret: a jump table could come back */
	CASE("a jcc with a jump table in the function", BFT_ENTRY_INDIRECT, 0,
	     TEST_RDI, 0x74, 0x02, 0xff, 0xe0, RET),
	/* the same with a push: no jump table leads to a prologue */
	CASE("a push with a jump table in the function", BFT_ENTRY_MOVED, 3,
	     MOV_RDI_RAX, PUSH_RBP, 0xff, 0xe0),
	CASE("too long a walk", BFT_ENTRY_TOO_FAR, 0,
	     MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX,
	     MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, PUSH_RBP, RET),
	CASE("eight on the way is not too long", BFT_ENTRY_MOVED, 24,
	     MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX,
	     MOV_RDI_RAX, MOV_RDI_RAX, MOV_RDI_RAX, PUSH_RBP, RET),
	CASE("the end of the function", BFT_ENTRY_END, 4,
	     ENDBR, MOV_RDI_RAX, XOR_EAX),
	CASE("undecodable bytes", BFT_ENTRY_UNDECODABLE, 0,
	     MOV_RDI_RAX, 0x06, PUSH_RBP, RET),
	/* push %rax with a 0x48 REX prefix: single-stepped by the kernel */
	CASE("a push the kernel does not emulate", BFT_ENTRY_STACK, 0,
	     MOV_RDI_RAX, 0x48, 0x50),
	CASE("a jmp onto its own next instruction, past an endbr64",
	     BFT_ENTRY_TARGET, 0, ENDBR, PUSH_RBP, 0xeb, 0xfd),
};

FIXTURE(entry) {
	struct bft_entry *e;
};

FIXTURE_SETUP(entry)
{
	ASSERT_EQ(0, bft_entry_open(&self->e));
}

FIXTURE_TEARDOWN(entry)
{
	bft_entry_close(self->e);
}

TEST_F(entry, each_case_gets_its_place_and_reason)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct entry_case *c = &cases[i];
		uint64_t off = ~0ull;
		int rc;

		rc = bft_entry_place(self->e, c->code, c->size, BASE, NULL, &off);
		EXPECT_EQ(c->rule, rc) {
			TH_LOG("%s: %s, not %s", c->name, bft_entry_rule_name(rc),
			       bft_entry_rule_name(c->rule));
		}
		EXPECT_EQ(c->offset, off) {
			TH_LOG("%s: offset %llu", c->name, (unsigned long long)off);
		}
	}
}

/* A jump from another function into this one's way in refuses the move. */
TEST_F(entry, a_target_from_elsewhere_in_the_object_refuses)
{
	static const uint8_t f[] = { MOV_RDI_RAX, XOR_EAX, PUSH_RBP, 0x5d, RET };
	/* the sibling: mov; jmp to f + 3 (the xor), as glibc's asm does */
	static const uint8_t g[] = { MOV_RDI_RAX, 0xe9, 0x00, 0x00, 0x00, 0x00 };
	struct bft_entry_targets t = { 0 };
	uint64_t g_addr = BASE + 0x100, off = ~0ull;
	int32_t rel = (int32_t)((BASE + 3) - (g_addr + sizeof(g)));
	uint8_t gb[sizeof(g)];

	memcpy(gb, g, sizeof(g));
	memcpy(gb + 4, &rel, sizeof(rel));
	ASSERT_EQ(0, bft_entry_targets_add(self->e, &t, f, sizeof(f), BASE));
	ASSERT_EQ(0, bft_entry_targets_add(self->e, &t, gb, sizeof(gb), g_addr));
	bft_entry_targets_sort(&t);
	ASSERT_EQ(1u, t.n);
	EXPECT_EQ(BASE + 3, t.v[0]);
	EXPECT_EQ(BFT_ENTRY_MOVED,
		  bft_entry_place(self->e, f, sizeof(f), BASE, NULL, &off));
	EXPECT_EQ(5u, off);
	EXPECT_EQ(BFT_ENTRY_TARGET,
		  bft_entry_place(self->e, f, sizeof(f), BASE, &t, &off));
	EXPECT_EQ(0u, off);
	/* a call to the function's own start is an entry, not a second way in */
	t.v[0] = BASE;
	EXPECT_EQ(BFT_ENTRY_MOVED,
		  bft_entry_place(self->e, f, sizeof(f), BASE, &t, &off));
	bft_entry_targets_free(&t);
}

TEST_F(entry, undecodable_bytes_are_skipped_and_counted)
{
	/* mov; a byte that is no instruction; jmp +0 */
	static const uint8_t bad[] = { MOV_RDI_RAX, 0x06, 0xeb, 0x00 };
	struct bft_entry_targets t = { 0 };

	ASSERT_EQ(0, bft_entry_targets_add(self->e, &t, bad, sizeof(bad), BASE));
	EXPECT_EQ(1u, t.undecodable);
	/* and the sweep goes on past it */
	ASSERT_EQ(1u, t.n);
	EXPECT_EQ(BASE + 6, t.v[0]);
	bft_entry_targets_free(&t);
}

TEST(every_rule_has_a_name_and_a_reason)
{
	for (int r = 0; r < BFT_ENTRY_NRULES; r++) {
		EXPECT_NE(NULL, bft_entry_rule_name(r));
		EXPECT_NE(NULL, bft_entry_rule_why(r));
		EXPECT_STRNE("?", bft_entry_rule_name(r));
	}
	EXPECT_STREQ("?", bft_entry_rule_name(BFT_ENTRY_NRULES));
}

TEST_HARNESS_MAIN
