// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl: drive bftrace.ko.  The command table; each command is in its own
 * file.
 */
#include <stdio.h>
#include <string.h>

#include "bfctl.h"
#include "output.h"

static const struct cmd commands[] = {
	{ "attach", cmd_attach, "--pid PID --pattern PATTERN... [--list] [--no-follow]",
	  "Put probes on the functions of process PID that the patterns select.\n"
	  "Unless --no-follow, a bfctl process stays as its tracer and applies the\n"
	  "patterns to the libraries it loads later (dlopen), its loading thread\n"
	  "held meanwhile; patterns whose library is not loaded yet are pending\n"
	  "(see 'bfctl status').  It ends with the process, at detach and at stop." },
	{ "detach", cmd_detach, "--pid PID | --all",
	  "Remove the probes of process PID, or of every process." },
	{ "run", cmd_run, "[--suspended] [--no-follow] --pattern PATTERN... -- COMMAND [ARG...]",
	  "Launch COMMAND under trace, missing not even its first call.\n"
	  "It is held before its first instruction until the probes are attached\n"
	  "and tracing has started; bfctl then exits with its exit status.\n"
	  "Every process it creates and every program it execs is followed and\n"
	  "held the same way, and every library it loads later (dlopen), its\n"
	  "loading thread held (not with --no-follow); one that matches nothing\n"
	  "runs untraced, and run fails (5) only if no process ever matched." },
	{ "start", cmd_mode, "", "Start recording (mode tracing)." },
	{ "stop", cmd_mode, "",
	  "Stop recording, detach every probe, seal the rings (mode shutting_down)." },
	{ "pause", cmd_mode, "", "Stop every thread of every target (SIGSTOP)." },
	{ "unpause", cmd_mode, "", "Continue the targets (SIGCONT)." },
	{ "suspend", cmd_mode, "", "Stop recording; probes stay, hits are dropped and counted." },
	{ "unsuspend", cmd_mode, "", "Resume recording after suspend." },
	{ "status", cmd_status, "[--watch [--interval SEC] [--count N]]",
	  "Mode, probes, targets and per-CPU ring counters." },
	{ "caps", cmd_caps, "", "The module's protocol version, features and limits." },
	{ "get", cmd_get, "[OPTION]", "Show one option, or all of them." },
	{ "set", cmd_set, "OPTION VALUE", "Change an option." },
	{ "methods", cmd_methods, "[--pid PID] [--all]",
	  "The kernel's method table: id, hits, offset, signature per probe." },
	{ "record", cmd_record, "[--events] [--duration SEC] [--pid PID]",
	  "Read the rings and print the calls per method, or every call.\n"
	  "It reads until 'bfctl stop', an interrupt or --duration; with --events\n"
	  "it prints every call as it happens." },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct cmd *cmd_find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bfctl [-v|-vv|-vvv] [--json] [--backend kmod|bpf|inline|auto] COMMAND [ARGS]\n\n"
		"bfctl drives bftrace.ko, a function tracer for running processes, or\n"
		"its BPF backend where the module cannot be loaded.\n\n"
		"commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *nl = strchr(commands[i].summary, '\n');

		fprintf(f, "  %-10s %.*s\n", commands[i].name,
			nl ? (int)(nl - commands[i].summary) : (int)strlen(commands[i].summary),
			commands[i].summary);
	}
	fprintf(f, "\n'bfctl COMMAND --help' describes each one.\n\n"
		"patterns: [!][OBJECT:]SYMBOL, e.g. 'foo_*', '!*_slow',\n"
		"  'libsqlite3.so*:sqlite3_*', 'ns::Class::method*'.  Probes are named\n"
		"  OBJECT!SYMBOL (file name of the ELF object, demangled C++ symbol).\n"
		"  Cold fragments (foo.cold) are left out; setjmp and its kin get\n"
		"  entry probes only.\n\n"
		"exceptions: with return probes, bfctl adds the module's exception\n"
		"  hooks (unwinder, __cxa_begin_catch, __cxa_throw, longjmp) so that C++\n"
		"  exceptions and thread cancellation survive traced frames.  Where\n"
		"  they cannot work (module without feature 'unwind', unknown unwinder)\n"
		"  it says so and records entries only, unless --force.\n\n"
		"backend: --backend (or $BFT_BACKEND) kmod, bpf, inline or auto (default):\n"
		"  inline patches the target's functions through ptrace (by name only);\n"
		"  auto is the module if it is loaded, else BPF.  The BPF backend keeps its\n"
		"  session pinned under /sys/fs/bpf/bftrace; it has no exception hooks,\n"
		"  so it records entries only where C++ exceptions may unwind.\n\n"
		"verbosity: -v features and failures in detail, -vv connection and\n"
		"  objects searched, -vvv every request sent to the module.\n\n"
		"exit codes:\n"
		"  0  success\n"
		"  1  the kernel or the system refused (the message says why)\n"
		"  2  bad option, argument, pattern or regex\n"
		"  3  bftrace.ko not loaded, or it speaks another protocol version; or\n"
		"     the BPF backend cannot run here (no bpf(), no BTF, kernel < 5.15)\n"
		"  4  no such process, it exited, or its objects cannot be read\n"
		"  5  the patterns select no function\n"
		"  6  more probes than --max-probes or the module's max_probes allow\n"
		"  7  permission denied (needs CAP_PERFMON or CAP_SYS_ADMIN, and ptrace\n"
		"     access; BPF: CAP_BPF and CAP_PERFMON)\n"
		"  run: the command's own exit status (128+N if killed by signal N)\n"
		"  once it has started; the codes above before that, and 5 if none of\n"
		"  its processes matched the patterns.\n");
}

int main(int argc, char **argv)
{
	struct ctl c = { 0 };
	const struct cmd *cmd;
	int i = 1;

	/* Global options may come before the command as well as after it. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return EXIT_OK;
		} else if (!strcmp(a, "--json") || !strcmp(a, "-j")) {
			c.json = true;
		} else if (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) {
			c.verbose += (unsigned int)strlen(a + 1);
		} else if (!strcmp(a, "--verbose")) {
			c.verbose++;
		} else if (!strncmp(a, "--backend=", 10)) {
			c.backend = a + 10;
		} else if (!strcmp(a, "--backend") && i + 1 < argc) {
			c.backend = argv[++i];
		} else {
			fprintf(stderr, "bfctl: unknown option '%s' (see 'bfctl --help')\n", a);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = cmd_find(argv[i]);
	if (!cmd) {
		fprintf(stderr, "bfctl: unknown command '%s' (see 'bfctl --help')\n", argv[i]);
		return EXIT_USAGE;
	}
	current_cmd = cmd;
	out_init(stdout, c.json);
	return cmd->run(&c, argc - i - 1, argv + i + 1);
}
