/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Encoders for the record format of include/uapi/linux/bftrace.h, 2.1-2.2.
 * Callers size their buffers with BFT_RECORD_MAX per record.
 */
#ifndef BFT_VARINT_H
#define BFT_VARINT_H

#include <linux/types.h>
#include <linux/bftrace.h>

#define BFT_F_ENTER	0x80
#define BFT_F_EXIT	0x00
#define BFT_PACK_CONT	0x40
#define BFT_PACK_LOW	0x3f

static inline unsigned int bft_put_varint(u8 *p, u64 v)
{
	unsigned int n = 0;

	while (v >= 0x80) {
		p[n++] = (v & 0x7f) | 0x80;
		v >>= 7;
	}
	p[n++] = v;
	return n;
}

/* seeds/001: the flag in bit 7, the low 6 bits of @v, then LEB128. */
static inline unsigned int bft_put_packed(u8 *p, u8 flag, u64 v)
{
	if (v <= BFT_PACK_LOW) {
		p[0] = flag | v;
		return 1;
	}
	p[0] = flag | BFT_PACK_CONT | (v & BFT_PACK_LOW);
	return 1 + bft_put_varint(p + 1, v >> 6);
}

static inline unsigned int bft_put_esc(u8 *p, u8 kind)
{
	p[0] = BFT_ESC_LEAD | kind;
	p[1] = 0;
	return 2;
}

/* The most time units an ENTER or EXIT carries in its own value (2.1). */
static inline u32 bft_units_inline(u8 tbits)
{
	return (1U << tbits) - 1;
}

/* An EXIT run of @n exits, @units after the record before it. */
static inline unsigned int bft_put_exits(u8 *p, u8 tbits, u32 n, u8 units)
{
	return bft_put_packed(p, BFT_F_EXIT, ((u64)(n - 1) << tbits) | units);
}

/* Stream time += @units time units: nothing, TIME_SHORT or TIME. */
static inline unsigned int bft_put_units(u8 *p, u64 units)
{
	unsigned int n;

	if (!units)
		return 0;
	if (units <= BFT_TIME_SHORT_MAX)
		return bft_put_esc(p, BFT_ESC_TIME_SHORT - 1 + units);
	n = bft_put_esc(p, BFT_ESC_TIME);
	return n + bft_put_varint(p + n, units);
}

#endif /* BFT_VARINT_H */
