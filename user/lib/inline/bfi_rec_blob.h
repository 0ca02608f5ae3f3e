/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_rec_blob: the inline backend's recorder, as the tools carry it.
 *
 * bfi_rec_bin is build/user/inline/bfi_rec.bin (user/inline/, built
 * freestanding and position-independent): it starts with struct
 * bfi_rec_hdr (user/inline/bfi_layout.h), whose size is all of it.  Copy
 * the bfi_rec_bin_len bytes to code + BFI_TEXT_OFF of a code area whose
 * struct bfi_code names the area; a stub calls text + hdr.enter_off with
 * the method's index in r11d, and a swapped return address is
 * text + hdr.exit_off.
 */
#ifndef BFI_REC_BLOB_H
#define BFI_REC_BLOB_H

#include <stddef.h>

extern const unsigned char bfi_rec_bin[];
extern const size_t bfi_rec_bin_len;

#endif /* BFI_REC_BLOB_H */
