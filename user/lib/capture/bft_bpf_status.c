// SPDX-License-Identifier: GPL-2.0
/*
 * What the BPF backend reports of itself: its capabilities and the
 * session's status, per CPU, as the module's BFT_CMD_GET_CAPS and
 * BFT_CMD_GET_STATUS (kmod/bft_genl.c) do.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>

#include "capture/bft_bpf_internal.h"

int bft_bpf_get_caps(struct bft_bpf *b, struct bft_nl_caps *caps)
{
	memset(caps, 0, sizeof(*caps));
	caps->proto_version = BFT_PROTO_VERSION;
	caps->features = BFT_BPF_FEATURES;
	caps->nr_cpus = b->nr_cpus;
	caps->limits.max_targets = BFT_MAX_TARGETS;
	caps->limits.max_probes = bft_opt_rule(BFT_OPT_MAX_PROBES)->max;
	caps->limits.name_max = BFT_NAME_MAX;
	caps->limits.path_max = BFT_PATH_MAX;
	caps->limits.uretprobe_depth = BFT_URETPROBE_DEPTH;
	return 0;
}

/* The pid that holds an flock on dir, from /proc/locks; 0 if unknown. */
pid_t bft_bpf_flock_holder(const char *dir)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	pid_t pid = 0;
	int who;
	FILE *f;

	if (stat(dir, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!pid && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: FLOCK %*s %*s %d %x:%x:%lu", &who, &maj,
			   &min, &ino) == 4 && maj == major(st.st_dev) &&
		    min == minor(st.st_dev) && ino == st.st_ino)
			pid = who;
	fclose(f);
	return pid;
}

int bft_bpf_get_status(struct bft_bpf *b, struct bft_nl_status *st)
{
	size_t sz = BFT_BPF_CPU_STRIDE;
	uint32_t targets[BFT_MAX_TARGETS], zero = 0;
	struct bft_bpf_ctl ctl;
	char p[PATH_MAX];
	bool reader;
	char *vals;
	int err;

	memset(st, 0, sizeof(*st));
	err = bft_bpf_session_open(b, false);
	if (err == -ENOENT)
		bft_bpf_ctl_default(&ctl);	/* none yet: an idle one */
	else if (!err)
		err = bft_bpf_ctl_read(b, &ctl);
	if (err && err != -ENOENT)
		return err;
	vals = calloc(b->nr_cpus, sz);
	st->cpus = calloc(b->nr_cpus, sizeof(*st->cpus));
	if (!vals || !st->cpus) {
		free(vals);
		free(st->cpus);
		st->cpus = NULL;
		return -ENOMEM;
	}
	if (b->cpus_fd >= 0 && bpf_map_lookup_elem(b->cpus_fd, &zero, vals)) {
		err = bft_bpf_err_set(b, -errno, "reading the CPU state: %s",
				      strerror(errno));
		free(vals);
		free(st->cpus);
		st->cpus = NULL;
		return err;
	}
	st->mode = ctl.mode;
	st->owner = ctl.owner;
	st->nr_probes = ctl.nr_probes;
	st->nr_targets = bft_bpf_targets_list(targets, BFT_MAX_TARGETS);
	st->nr_cpus = b->nr_cpus;
	bft_bpf_pin_path(p, sizeof(p), "links");
	reader = bft_bpf_flock_holder(p) != 0;
	for (uint32_t cpu = 0; cpu < b->nr_cpus; cpu++) {
		const struct bft_bpf_cpu *c = (const void *)(vals + cpu * sz);
		struct bft_nl_cpu_stats *s = &st->cpus[cpu];
		uint64_t rd = 0;

		if (b->read_fd >= 0)
			bpf_map_lookup_elem(b->read_fd, &cpu, &rd);
		s->cpu = cpu;
		/* pending: the open exit run, as in the module */
		s->produced = c->produced;
		s->written = c->written;
		s->lost = c->lost;
		s->suspended = c->suspended;
		s->bytes_written = c->bytes_written;
		s->bytes_read = rd;
		s->used = c->bytes_written > rd ? c->bytes_written - rd : 0;
		s->size = ctl.opts[BFT_OPT_BUF_SIZE];
		s->reader = reader;
		s->have = ~0u;
	}
	st->have = ~0u;
	free(vals);
	return 0;
}
