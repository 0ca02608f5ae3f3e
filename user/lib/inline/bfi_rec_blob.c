// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_rec_blob: embeds build/user/inline/bfi_rec.bin (the recorder copied
 * into each target) into libbftrace.a; the Makefile passes its path as
 * BFI_REC_BIN and rebuilds this object when it changes.
 */
#include "inline/bfi_rec_blob.h"

#ifndef BFI_REC_BIN
#error "BFI_REC_BIN: the path of bfi_rec.bin, set by user/Makefile"
#endif

__asm__(".section .rodata.bfi_rec_bin, \"a\"\n"
	".balign 64\n"
	".globl bfi_rec_bin\n"
	".type bfi_rec_bin, @object\n"
	"bfi_rec_bin:\n"
	".incbin \"" BFI_REC_BIN "\"\n"
	"bfi_rec_bin_end:\n"
	".size bfi_rec_bin, bfi_rec_bin_end - bfi_rec_bin\n"
	".balign 8\n"
	".globl bfi_rec_bin_len\n"
	".type bfi_rec_bin_len, @object\n"
	"bfi_rec_bin_len:\n"
	".quad bfi_rec_bin_end - bfi_rec_bin\n"
	".size bfi_rec_bin_len, 8\n"
	".previous\n");
