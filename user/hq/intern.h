/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Strings numbered in order of first use (intern.c): trace.pftrace's
 * interned event names and trace.speedscope.json's frames are each a
 * table of them.
 */
#ifndef BFT_HQ_INTERN_H
#define BFT_HQ_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct intern_slot {
	char *s;
	uint64_t id;
};

struct intern {
	struct intern_slot *v;	/* open addressing on the string */
	size_t cap, count;
};

/*
 * s's number, from 1; *fresh tells whether s was new.  0 if memory ran
 * out.
 */
uint64_t intern_id(struct intern *t, const char *s, bool *fresh);
/* The strings by number: v[id - 1], t->count of them; NULL if no memory. */
const char **intern_by_id(const struct intern *t);
void intern_free(struct intern *t);

#endif
