/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_rec_entry.S: the recorder's head (struct bfi_rec_hdr, the first
 * bytes of bfi_rec.bin), its two entry points and its raw system calls.
 *
 * enter_common is reached by "call" from a stub, with r11d the method's
 * index; exit_common by the "ret" of a traced function whose return
 * address it took.  At both points the ABI leaves r11 and the arithmetic
 * flags dead and DF clear; everything else a caller or the function may
 * expect is kept: the C code keeps the callee-saved registers itself,
 * these keep the rest, and the recorder never touches x87 or SSE
 * (-mgeneral-regs-only).  The stack is realigned, never assumed aligned.
 */
/* BFI_MAGIC and BFI_VERSION: bfi_rec.c checks that they agree. */
#define BFI_REC_MAGIC	0x656e696c6e496642
#define BFI_REC_VERSION	1

	.section .bfi_head, "ax"
	.globl	bfi_rec_start
	.hidden	bfi_rec_start
bfi_rec_start:
	.quad	BFI_REC_MAGIC
	.long	BFI_REC_VERSION
	.long	bfi_rec_end - bfi_rec_start
	.long	bfi_enter_common - bfi_rec_start
	.long	bfi_exit_common - bfi_rec_start
	.long	0, 0

	.text
/* The registers below rbp, in struct bfi_regs order (bfi_rec.h). */
.macro	save_scratch
	push	%rbp
	mov	%rsp, %rbp
	push	%rax
	push	%rcx
	push	%rdx
	push	%rsi
	push	%rdi
	push	%r8
	push	%r9
	push	%r10
.endm

.macro	restore_scratch
	lea	-64(%rbp), %rsp
	pop	%r10
	pop	%r9
	pop	%r8
	pop	%rdi
	pop	%rsi
	pop	%rdx
	pop	%rcx
	pop	%rax
	pop	%rbp
.endm

/*
 * [rsp] returns into the stub, [rsp + 8] is the traced function's return
 * address: its slot is what bfi_enter may swap.
 */
	.globl	bfi_enter_common
	.hidden	bfi_enter_common
	.type	bfi_enter_common, @function
bfi_enter_common:
	save_scratch
	mov	%r11d, %edi
	lea	16(%rbp), %rsi
	mov	%rsp, %rdx
	and	$-16, %rsp
	call	bfi_enter
	restore_scratch
	ret
	.size	bfi_enter_common, . - bfi_enter_common

/*
 * rsp is the returned function's return slot + 8: bfi_exit finds the real
 * return address by that slot and hands it back in rax.
 */
	.globl	bfi_exit_common
	.hidden	bfi_exit_common
	.type	bfi_exit_common, @function
bfi_exit_common:
	save_scratch
	lea	8(%rbp), %rdi
	and	$-16, %rsp
	call	bfi_exit
	mov	%rax, %r11
	restore_scratch
	jmp	*%r11
	.size	bfi_exit_common, . - bfi_exit_common

/* long bfi_syscall(long nr, long a, long b, long c) */
	.globl	bfi_syscall
	.hidden	bfi_syscall
	.type	bfi_syscall, @function
bfi_syscall:
	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	syscall
	ret
	.size	bfi_syscall, . - bfi_syscall

	.section .note.GNU-stack, "", @progbits
