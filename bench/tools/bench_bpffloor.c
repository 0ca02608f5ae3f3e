// SPDX-License-Identifier: GPL-2.0
/*
 * bench-bpffloor: the native floor of scripts/bench.  Attaches the empty
 * uprobe and uretprobe programs of bench_floor.bpf.o to each function
 * named, runs a command, and detaches: what a traced call costs when the
 * probe's program does nothing (the trap, the uprobe core and the BPF
 * dispatch), the figure a tracer's own cost is measured against.
 *
 *   bench-bpffloor [-c] [-m] OBJ PATH:FUNC[+OFF]... -- COMMAND [ARG...]
 *
 * The probes are perf-event links, as bpftrace 0.17 makes them; with -m
 * uprobe_multi links (Linux 6.6), the kind bftrace's BPF backend makes
 * there, which costs the traced call less.
 * +OFF places both probes OFF bytes into the function (past an endbr64, as
 * bfctl does).  With -c the kernel's BPF run statistics are on during the
 * run (they add two clock reads per program run, so not for timing) and the
 * programs' run counts are printed after the command's own output:
 *   floor probes=P entries=E returns=R
 * The exit status is the command's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bft_bpf.h"
#include "symbols/bft_elf.h"

struct probe {
	struct bpf_link *link;	/* perf-event link */
	int fd;			/* uprobe_multi link, or -1 */
};

static int usage(void)
{
	fprintf(stderr, "usage: bench-bpffloor [-c] [-m] OBJ PATH:FUNC[+OFF]... -- COMMAND [ARG...]\n");
	return 2;
}

/* PATH:FUNC[+OFF] split in place: *func and *off, or -EINVAL. */
static int parse_spec(char *path, const char *spec, char **func,
		      unsigned long *off)
{
	char *plus;

	*off = 0;
	*func = strrchr(path, ':');
	if (!*func || *func == path || !(*func)[1]) {
		fprintf(stderr, "bench-bpffloor: '%s' is not PATH:FUNC[+OFF]\n", spec);
		return -EINVAL;
	}
	*(*func)++ = '\0';
	plus = strchr(*func, '+');
	if (plus) {
		char *end;

		*plus++ = '\0';
		errno = 0;
		*off = strtoul(plus, &end, 0);
		if (errno || end == plus || *end) {
			fprintf(stderr, "bench-bpffloor: bad offset in '%s'\n", spec);
			return -EINVAL;
		}
	}
	return 0;
}

/* uprobe_multi wants a file offset: libbpf 1.1 resolves none for it. */
static int file_offset(const char *path, const char *func, uint64_t *out)
{
	struct bft_elf_func f;
	struct bft_elf *e;
	char why[256];
	int err;

	err = bft_elf_open(path, &e, why, sizeof(why));
	if (err) {
		fprintf(stderr, "bench-bpffloor: %s: %s\n", path, why);
		return err;
	}
	err = bft_elf_find_func(e, func, &f);
	if (err)
		fprintf(stderr, "bench-bpffloor: %s in %s: %s\n", func, path,
			err == -ENOENT ? "no such function" : strerror(-err));
	else
		*out = f.offset;
	bft_elf_close(e);
	return err;
}

static int attach(struct bpf_program *prog, int ret, int multi,
		  const char *spec, struct probe *p)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret);
	char *path = strdup(spec), *func;
	unsigned long off;
	uint64_t foff;
	int err;

	if (!path)
		return -ENOMEM;
	err = parse_spec(path, spec, &func, &off);
	if (!err && multi)
		err = file_offset(path, func, &foff);
	if (err)
		goto out;
	if (multi) {
		foff += off;
		p->fd = bft_bpf_link_multi(bpf_program__fd(prog), 0, path,
					   &foff, NULL, 1, ret);
		err = p->fd < 0 ? p->fd : 0;
	} else {
		o.func_name = func;
		p->link = bpf_program__attach_uprobe_opts(prog, -1, path, off, &o);
		err = p->link ? 0 : -errno;
	}
	if (err)
		fprintf(stderr, "bench-bpffloor: attaching %s to %s: %s\n",
			ret ? "the return probe" : "the entry probe", spec, strerror(-err));
out:
	free(path);
	return err;
}

static long long run_count(struct bpf_program *prog)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -1;
	return (long long)info.run_cnt;
}

int main(int argc, char **argv)
{
	struct bpf_program *entry, *ret;
	struct bpf_object *obj;
	struct probe *probes;
	int count = 0, multi = 0, stats = -1, nspec, status, i, rc = 1;
	pid_t pid;

	for (; argc > 1 && argv[1][0] == '-' && strcmp(argv[1], "--"); argv++, argc--) {
		if (!strcmp(argv[1], "-c"))
			count = 1;
		else if (!strcmp(argv[1], "-m"))
			multi = 1;
		else
			return usage();
	}
	for (nspec = 0; 2 + nspec < argc && strcmp(argv[2 + nspec], "--"); nspec++)
		;
	if (argc < 3 || nspec == 0 || 2 + nspec + 1 >= argc)
		return usage();

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "bench-bpffloor: opening %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	entry = bpf_object__find_program_by_name(obj, "floor_entry");
	ret = bpf_object__find_program_by_name(obj, "floor_return");
	if (!entry || !ret) {
		fprintf(stderr, "bench-bpffloor: %s lacks floor_entry or floor_return\n", argv[1]);
		goto out_obj;
	}
	if (multi) {
		bpf_program__set_expected_attach_type(entry, BFT_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(ret, BFT_TRACE_UPROBE_MULTI);
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "bench-bpffloor: loading %s: %s\n", argv[1], strerror(errno));
		goto out_obj;
	}
	probes = calloc(2 * (size_t)nspec, sizeof(*probes));
	if (!probes) {
		perror("bench-bpffloor");
		goto out_obj;
	}
	for (i = 0; i < 2 * nspec; i++)
		probes[i].fd = -1;
	for (i = 0; i < nspec; i++)
		if (attach(entry, 0, multi, argv[2 + i], &probes[2 * i]) ||
		    attach(ret, 1, multi, argv[2 + i], &probes[2 * i + 1]))
			goto out_links;
	if (count) {
		stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats < 0) {
			fprintf(stderr, "bench-bpffloor: enabling BPF run statistics: %s\n",
				strerror(errno));
			goto out_links;
		}
	}

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("bench-bpffloor: fork");
		goto out_links;
	}
	if (pid == 0) {
		execvp(argv[2 + nspec + 1], &argv[2 + nspec + 1]);
		fprintf(stderr, "bench-bpffloor: %s: %s\n", argv[2 + nspec + 1], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("bench-bpffloor: waitpid");
			goto out_links;
		}
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (count)
		printf("floor probes=%d entries=%lld returns=%lld\n", nspec,
		       run_count(entry), run_count(ret));

out_links:
	if (stats >= 0)
		close(stats);
	for (i = 0; i < 2 * nspec; i++) {
		bpf_link__destroy(probes[i].link);
		if (probes[i].fd >= 0)
			close(probes[i].fd);
	}
	free(probes);
out_obj:
	bpf_object__close(obj);
	return rc;
}
