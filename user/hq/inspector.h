/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfhq --counters: the inspector of the counters protocol (seed 003).
 * It listens, takes one agent at a time, asks for what the command line
 * says (list, add, remove), and prints every sample as a table redrawn
 * in place or as JSON lines.  The part without sockets (insp_feed and
 * friends) is what the tests drive.
 */
#ifndef BFHQ_INSPECTOR_H
#define BFHQ_INSPECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "wire/bfc_wire.h"

struct insp_counter {
	bool used;
	struct bfc_header h;	/* h.name owned */
	bool have;		/* a value was sampled */
	double value;
	int64_t ivalue;
};

struct insp {
	FILE *out;
	FILE *record;		/* the JSON lines too, or NULL (--output) */
	bool json;
	bool redraw;		/* a terminal: draw the table in place */
	struct insp_counter *c;	/* by index */
	uint32_t nc;
	/* what was asked for, in order: the answers come back in order */
	int16_t pending_remove[64];
	uint32_t nremove_pending;
	struct bft_buf in, out_buf;	/* bytes from and to the agent */
	bool hello, bye;
	uint64_t samples, lists, bad_values;
	int64_t last_ticks;
	char err[256];		/* why the agent was dropped */
};

void insp_init(struct insp *s, FILE *out, bool json, bool redraw);
void insp_reset(struct insp *s);	/* a new agent */
void insp_free(struct insp *s);
/* Bytes from the agent: 0, or -EPROTO (s->err says why: drop it). */
int insp_feed(struct insp *s, const void *p, size_t n);
/* Requests, queued into s->out_buf. */
int insp_list(struct insp *s);
/* "CATEGORY:NAME" */
int insp_add(struct insp *s, const char *spec);
int insp_remove(struct insp *s, int16_t index);
/* BFC_CHANGES: on, Samples carry only the values that changed */
int insp_changes(struct insp *s, bool on);
int insp_bye(struct insp *s);
/* A line typed at the inspector: list, add C:N, remove I, changes on|off,
 * bye. */
int insp_command(struct insp *s, const char *line);

int inspector_main(int argc, char **argv);

#endif /* BFHQ_INSPECTOR_H */
