// SPDX-License-Identifier: GPL-2.0
/*
 * bench-bpffloor: the native floor of scripts/bench.  Attaches the empty
 * uprobe and uretprobe programs of bench_floor.bpf.o to each function
 * named, runs a command, and detaches: what a traced call costs when the
 * probe's program does nothing (the trap, the uprobe core and the BPF
 * dispatch), the figure a tracer's own cost is measured against.
 *
 *   bench-bpffloor [-c] OBJ PATH:FUNC[+OFF]... -- COMMAND [ARG...]
 *
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

static int usage(void)
{
	fprintf(stderr, "usage: bench-bpffloor [-c] OBJ PATH:FUNC[+OFF]... -- COMMAND [ARG...]\n");
	return 2;
}

static int attach(struct bpf_program *prog, int ret, const char *spec,
		  struct bpf_link **link)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = ret);
	char *path = strdup(spec), *func, *plus;
	unsigned long off = 0;
	int err = 0;

	if (!path)
		return -ENOMEM;
	func = strrchr(path, ':');
	if (!func || func == path || !func[1]) {
		fprintf(stderr, "bench-bpffloor: '%s' is not PATH:FUNC[+OFF]\n", spec);
		free(path);
		return -EINVAL;
	}
	*func++ = '\0';
	plus = strchr(func, '+');
	if (plus) {
		char *end;

		*plus++ = '\0';
		errno = 0;
		off = strtoul(plus, &end, 0);
		if (errno || end == plus || *end) {
			fprintf(stderr, "bench-bpffloor: bad offset in '%s'\n", spec);
			free(path);
			return -EINVAL;
		}
	}
	o.func_name = func;
	*link = bpf_program__attach_uprobe_opts(prog, -1, path, off, &o);
	if (!*link) {
		err = -errno;
		fprintf(stderr, "bench-bpffloor: attaching %s to %s: %s\n",
			ret ? "the return probe" : "the entry probe", spec, strerror(errno));
	}
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
	struct bpf_link **links;
	struct bpf_object *obj;
	int count = 0, stats = -1, nspec, status, i, rc = 1;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "-c")) {
		count = 1;
		argv++;
		argc--;
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
	if (bpf_object__load(obj)) {
		fprintf(stderr, "bench-bpffloor: loading %s: %s\n", argv[1], strerror(errno));
		goto out_obj;
	}
	entry = bpf_object__find_program_by_name(obj, "floor_entry");
	ret = bpf_object__find_program_by_name(obj, "floor_return");
	links = calloc(2 * (size_t)nspec, sizeof(*links));
	if (!entry || !ret || !links) {
		fprintf(stderr, "bench-bpffloor: %s lacks floor_entry or floor_return\n", argv[1]);
		goto out_links;
	}
	for (i = 0; i < nspec; i++)
		if (attach(entry, 0, argv[2 + i], &links[2 * i]) ||
		    attach(ret, 1, argv[2 + i], &links[2 * i + 1]))
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
	for (i = 0; links && i < 2 * nspec; i++)
		bpf_link__destroy(links[i]);
	free(links);
out_obj:
	bpf_object__close(obj);
	return rc;
}
