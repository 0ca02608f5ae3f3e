// SPDX-License-Identifier: GPL-2.0
/*
 * bft_dev_status: see bft_dev_status.h.
 */
#include "capture/bft_dev_status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/bftrace.h>

/* section 2.6 gives these sizes; the kernel's copy must agree */
_Static_assert(sizeof(struct bft_ioc_status) == 32, "bft_ioc_status size");
_Static_assert(sizeof(struct bft_ioc_cpu_stats) == 64,
	       "bft_ioc_cpu_stats size");

#define ALL_TOP	((1u << BFT_A_MODE) | (1u << BFT_A_NR_PROBES) | \
		 (1u << BFT_A_NR_TARGETS) | (1u << BFT_A_OWNER) | \
		 (1u << BFT_A_CPU_STATS))
#define ALL_CPU	((1u << BFT_S_CPU) | (1u << BFT_S_PRODUCED) | \
		 (1u << BFT_S_WRITTEN) | (1u << BFT_S_LOST) | \
		 (1u << BFT_S_SUSPENDED) | (1u << BFT_S_BYTES_WRITTEN) | \
		 (1u << BFT_S_BYTES_READ) | (1u << BFT_S_USED) | \
		 (1u << BFT_S_SIZE))

/* Room for this many CPUs on the first try: most machines need no second. */
#define FIRST_GUESS	64

int bft_dev_status(int fd, struct bft_nl_status *st)
{
	struct bft_ioc_cpu_stats *v = NULL;
	struct bft_ioc_status q;
	uint32_t cap = FIRST_GUESS, i;

	memset(st, 0, sizeof(*st));
	for (;;) {
		struct bft_ioc_cpu_stats *nv = realloc(v, cap * sizeof(*v));

		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		memset(&q, 0, sizeof(q));
		q.nr_cpus = cap;
		q.cpus = (uintptr_t)v;
		if (ioctl(fd, BFT_IOC_STATUS, &q) < 0) {
			int e = -errno;

			free(v);
			return e;
		}
		if (q.nr_cpus <= cap)
			break;
		/* CPUs the array missed: grow it to all of them and ask again */
		cap = q.nr_cpus;
	}
	st->cpus = calloc(q.nr_cpus ? q.nr_cpus : 1, sizeof(*st->cpus));
	if (!st->cpus) {
		free(v);
		return -ENOMEM;
	}
	st->mode = (uint8_t)q.mode;
	st->nr_probes = q.nr_probes;
	st->nr_targets = q.nr_targets;
	st->owner = q.owner;
	st->nr_cpus = q.nr_cpus;
	st->have = ALL_TOP;
	for (i = 0; i < q.nr_cpus; i++) {
		struct bft_nl_cpu_stats *c = &st->cpus[i];

		c->cpu = v[i].cpu;
		c->produced = v[i].produced;
		c->written = v[i].written;
		c->lost = v[i].lost;
		c->suspended = v[i].suspended;
		c->bytes_written = v[i].bytes_written;
		c->bytes_read = v[i].bytes_read;
		c->used = v[i].used;
		c->size = v[i].size;
		c->have = ALL_CPU;
	}
	free(v);
	return 0;
}
