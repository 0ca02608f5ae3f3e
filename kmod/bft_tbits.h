/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How a writer chooses the time bits of ENTER and EXIT values at each SYNC
 * (include/uapi/linux/bftrace.h, 2.1): the tbits that would have written
 * the events since the SYNC before in the fewest bytes.  A fixed tbits
 * fits one call rate only: at 2 bits, events more than 3 units apart (a
 * trap that costs over 3 us, as under TCG or on a host whose traps exit
 * to the hypervisor) each took a 2-byte TIME_SHORT besides.
 *
 * Shared by the module and the BPF programs (user/bpf), which must write
 * the same bytes for the same events, so it uses plain C types and no
 * helper either side lacks.
 */
#ifndef BFT_TBITS_H
#define BFT_TBITS_H

/*
 * ENTERs by the bit length of their id: 0..13, and 14 for longer ones;
 * events by the bit length of the units before them: 1..5.  Powers of
 * two, so an index masked with them is in bounds for the BPF verifier.
 */
#define BFT_TB_KEYS	16
#define BFT_TB_GAPS	8

struct bft_tb_hist {
	unsigned int keys[BFT_TB_KEYS];
	unsigned int gaps[BFT_TB_GAPS];
};

/* The bit length of @v, at most 14. */
static inline unsigned int bft_tb_len(unsigned long long v)
{
	unsigned int n = 0;

	if (v >= 1U << 14)
		return 14;
	if (v >> 8) {
		v >>= 8;
		n = 8;
	}
	if (v >> 4) {
		v >>= 4;
		n += 4;
	}
	if (v >> 2) {
		v >>= 2;
		n += 2;
	}
	if (v >> 1) {
		v >>= 1;
		n += 1;
	}
	return n + (unsigned int)v;
}

/*
 * An ENTER (@enter) or EXIT record, @units time units after the record
 * before it.  Gaps of 32 units or more need a TIME or TIME_SHORT whatever
 * tbits is, and an EXIT run's value is almost always 0: neither moves the
 * choice.
 */
static inline void bft_tb_note(struct bft_tb_hist *h, int enter,
			       unsigned int id, unsigned long long units)
{
	if (enter)
		h->keys[bft_tb_len(id) & (BFT_TB_KEYS - 1)]++;
	if (units && units < 32)
		h->gaps[bft_tb_len(units) & (BFT_TB_GAPS - 1)]++;
}

/*
 * The tbits for the records after this SYNC, from those before it: a
 * value takes one byte up to 6 bits, two up to 13; a gap longer than
 * tbits takes a 2-byte TIME_SHORT.  @cur on a tie, so an idle or steady
 * stream keeps what it has; else the smallest of equal costs.
 */
static inline unsigned char bft_tb_pick(const struct bft_tb_hist *h,
					unsigned char cur)
{
	unsigned long long above[BFT_TB_KEYS];	/* ENTERs longer than i */
	unsigned long long late = 0, best = ~0ULL, cost;
	unsigned char pick = cur;
	int i, t;

	above[BFT_TB_KEYS - 1] = 0;
	for (i = BFT_TB_KEYS - 2; i >= 0; i--)
		above[i] = above[i + 1] + h->keys[i + 1];
	/* late: the events whose gap does not fit in t bits */
	for (i = 1; i < BFT_TB_GAPS; i++)
		late += h->gaps[i];
	/* the smallest of equals: it leaves the most ids a byte */
	for (t = 0; t <= BFT_TIME_BITS_MAX; t++) {
		cost = above[6 - t] + above[13 - t] + 2 * late;
		if (cost < best || (cost == best && t == cur)) {
			best = cost;
			pick = t;
		}
		late -= h->gaps[t + 1];
	}
	return pick;
}

#endif /* BFT_TBITS_H */
