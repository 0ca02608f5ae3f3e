/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_sdt: the USDT (SystemTap SDT) probes an ELF file declares.
 *
 * <sys/sdt.h> puts a `nop` at each probe site and an ELF note, owner
 * "stapsdt", type 3, in .note.stapsdt:
 *     pc, base, semaphore    three 8-byte link-time addresses
 *     provider\0 name\0 args\0
 * base is the link-time address of the .stapsdt.base section; when the
 * file's own .stapsdt.base sits elsewhere (prelink moved it), pc and the
 * semaphore move by the same amount.  The semaphore, 0 when there is
 * none, is a 2-byte counter in .probes that the program reads to skip the
 * probe's argument set-up while nothing listens: a tracer adds one while
 * attached (the uprobe API does that with its ref_ctr_offset).
 *
 * args is gas operand text, one per argument, separated by spaces, each
 * "SIZE@OPERAND": SIZE is the byte count, negative for a signed value
 * (-4@%eax: a signed int in eax; 1@$5: the unsigned byte 5).  OPERAND is
 * a register (%rax, %eax, %ax, %al, %ah, %r8d...), an immediate ($-3,
 * $0x10), or memory: disp(%base), (%base,%index,scale), sym(%rip),
 * sym+off(%rip), or a bare symbol or number (an absolute address).
 *
 * The parsed form is what a probe handler can evaluate with the registers
 * at the site, the process's memory and the load bias (where the file's
 * link-time addresses are in the process: site address minus pc):
 *     REG    the register, shifted right by shift (8 for %ah)
 *     CONST  value
 *     MEM    the size bytes at  value + base + index * scale, where base
 *            and index are registers, BFT_SDT_NOREG for none, or
 *            BFT_SDT_BIAS for the load bias (a symbol's address)
 * then cut to size bytes and sign- or zero-extended to 64 bits.
 *
 * Registers are numbered by their 8-byte slot in x86-64's struct pt_regs,
 * which is also the start of struct user_regs_struct: r15 0, r14 1, r13 2,
 * r12 3, rbp 4, rbx 5, r11 6, r10 7, r9 8, r8 9, rax 10, rcx 11, rdx 12,
 * rsi 13, rdi 14, rip 16, rsp 19.
 *
 * Link with -lelf.
 */
#ifndef BFT_SDT_H
#define BFT_SDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/bftrace.h>

#define BFT_SDT_MAX_ARGS	12	/* <sys/sdt.h> takes at most 12 */
#define BFT_SDT_NAME_MAX	64	/* provider, name: longer ones are refused */
#define BFT_SDT_NOREG		0xff
#define BFT_SDT_BIAS		0xfe	/* pseudo register: the load bias */
#define BFT_SDT_REG_IP		16
#define BFT_SDT_NREGS		21	/* pt_regs slots up to ss */

enum bft_sdt_loc {
	BFT_SDT_CONST,
	BFT_SDT_REG,
	BFT_SDT_MEM,
};

struct bft_sdt_arg {
	enum bft_sdt_loc loc;
	uint8_t size;		/* 1, 2, 4 or 8 */
	bool is_signed;
	uint8_t base;		/* REG: the register; MEM: base register */
	uint8_t index;		/* MEM: index register */
	uint8_t scale;		/* MEM: 1, 2, 4 or 8 */
	uint8_t shift;		/* REG: 8 for %ah, %bh, %ch, %dh */
	int64_t value;		/* CONST: the value; MEM: displacement */
};

struct bft_sdt_probe {
	char provider[BFT_SDT_NAME_MAX];
	char name[BFT_SDT_NAME_MAX];
	uint64_t pc;		/* link-time address of the site */
	uint64_t offset;	/* its file offset: where the uprobe goes */
	uint64_t semaphore;	/* link-time address, 0: none */
	uint64_t sema_offset;	/* its file offset (ref_ctr_offset), 0: none */
	size_t nargs;
	struct bft_sdt_arg args[BFT_SDT_MAX_ARGS];
	/* why it cannot be probed ("" if it can): an argument that does not
	 * parse, a symbol the file does not define (stripped), a site
	 * outside the executable segments */
	char why[160];
};

struct bft_sdt_list {
	struct bft_sdt_probe *v;
	size_t n;
	size_t malformed;	/* notes without a readable provider and name */
};

/*
 * Every SDT probe of the ELF file path, in note order.  A file without
 * notes gives an empty list.  A probe that cannot be used is listed with
 * its reason in why; a note too broken to name its probe is counted in
 * malformed.  Fails only for the file: -ENOEXEC (not x86-64 ELF),
 * -ENOMEM, or -errno of the open, with the reason in err.
 */
int bft_sdt_read(const char *path, struct bft_sdt_list *out, char *err,
		 size_t errlen);
/* The same from the size bytes at data; name is for the messages. */
int bft_sdt_read_mem(const char *name, const void *data, size_t size,
		     struct bft_sdt_list *out, char *err, size_t errlen);
void bft_sdt_free(struct bft_sdt_list *l);

/*
 * Parse one "SIZE@OPERAND" into *a.  An operand that names a symbol
 * (sym(%rip), a bare symbol) is resolved with lookup, which gives its
 * link-time address, or returns -ENOENT; NULL refuses symbols.  0, or
 * -EINVAL with the reason in err.
 */
int bft_sdt_parse_arg(const char *text, struct bft_sdt_arg *a,
		      int (*lookup)(void *ctx, const char *sym, uint64_t *addr),
		      void *ctx, char *err, size_t errlen);

/* The register slot of a name without '%' ("eax"), or -1; *shift 8 for ah. */
int bft_sdt_reg(const char *name, uint8_t *shift);

/*
 * Evaluate a at a probe hit: regs are the BFT_SDT_NREGS pt_regs slots,
 * bias the load bias, read() copies len bytes of the process at addr
 * (0, or -errno).  The value, cut and extended as a says, goes to *v.
 */
int bft_sdt_eval(const struct bft_sdt_arg *a, const uint64_t *regs,
		 uint64_t bias,
		 int (*read)(void *ctx, uint64_t addr, void *buf, size_t len),
		 void *ctx, uint64_t *v);

/*
 * p's arguments as the uapi takes them (bftrace.h 2.4): a symbol's
 * address becomes BFT_USDT_SITE plus its distance from the site; unused
 * registers are BFT_USDT_NOREG and unused scales 1.  out holds p->nargs.
 */
void bft_sdt_uapi_args(const struct bft_sdt_probe *p, struct bft_usdt_arg *out);

#endif /* BFT_SDT_H */
