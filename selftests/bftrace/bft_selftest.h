/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_selftest: what the bftrace selftests share.
 *
 *   - targets: start a target from build/selftests/targets/, talk to it over
 *     its stdin/stdout, read the spinner's progress page, kill and reap it;
 *   - the module: load and unload bftrace.ko, see whether it and its
 *     netlink family are present;
 *   - a control session: one netlink handle, the options as found, and a
 *     reset that leaves the module idle (stopped, nothing attached, options
 *     restored, rings emptied) for the next test;
 *   - probes: resolve function names to probe offsets with bft_elf;
 *   - traces: drain every ring and decode the streams into per-thread event
 *     sequences with stream times.
 *
 * Helpers return 0 or -errno and print the reason on stderr (the harness
 * shows it next to the failing check); the tests decide what is fatal.
 * Each section below has a file of its own: bst_targets.c, bst_module.c,
 * bst_session.c, bst_probes.c, bst_traces.c, bst_tools.c, bst_owners.c and
 * bst_bpf.c.
 */
#ifndef BFT_SELFTEST_H
#define BFT_SELFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/bftrace.h>

#include "capture/bft_bpf.h"
#include "model/bft_calltree.h"
#include "capture/bft_nl.h"
#include "wire/bft_stream.h"
#include "spinner_shm.h"

/* ---- targets ----------------------------------------------------------- */

/* Path of <directory of this test>/targets/<name>; malloc'ed. */
char *bst_target_path(const char *name);

struct bst_proc {
	pid_t pid;		/* 0: not running (or reaped) */
	int in_fd;		/* the target's stdin, write end */
	int out_fd;		/* the target's stdout, read end */
	char line[256];		/* partial line read so far */
	size_t line_len;
	struct spin_shm *shm;	/* the spinner's progress page, or NULL */
	int status;		/* wait status once reaped */
};

/*
 * Start targets/<name> with argv (argv[0] is filled in; argv may be NULL)
 * and wait up to timeout_ms for its "ready" line.  with_shm: hand it a
 * shared progress page on SPIN_SHM_FD (the spinner's).
 */
int bst_proc_start(struct bst_proc *p, const char *name,
		   const char *const *argv, bool with_shm, int timeout_ms);
/* Write one byte to the target's stdin. */
int bst_proc_send(struct bst_proc *p, char c);
/* Wait for the next line equal to want; -ETIMEDOUT, -EPIPE on EOF. */
int bst_proc_wait_line(struct bst_proc *p, const char *want, int timeout_ms);
/* The next line, whatever it says, cut to len - 1 bytes; errnos as above. */
int bst_proc_read_line(struct bst_proc *p, char *buf, size_t len,
		       int timeout_ms);
/*
 * Fork this test into a target that runs body(in, out, arg) and exits with
 * its result: in is its end of bst_proc_send's pipe, out of the lines'.
 * body writes "ready" first; this waits up to timeout_ms for it.
 */
int bst_proc_fork(struct bst_proc *p, int (*body)(int in, int out, void *arg),
		  void *arg, int timeout_ms);
/* Wait up to timeout_ms for the process to exit and reap it. */
int bst_proc_wait_exit(struct bst_proc *p, int timeout_ms);
/* SIGKILL (through SIGCONT in case it is stopped) and reap; no-op if gone. */
void bst_proc_kill(struct bst_proc *p);
/* Still running, and not a zombie. */
bool bst_proc_alive(const struct bst_proc *p);

/* Spinner progress: total returned calls over every spinning thread. */
uint64_t bst_spin_calls(const struct bst_proc *p);
/* Wait up to timeout_ms until the total grows by at least more. */
int bst_spin_wait_calls(const struct bst_proc *p, uint64_t more,
			int timeout_ms);

/*
 * The state letter (field 3 of /proc/<pid>/task/<tid>/stat) of every
 * thread of pid, up to cap; the number of threads in *n.
 */
int bst_thread_states(pid_t pid, char *states, size_t cap, size_t *n);
/* Wait up to timeout_ms until every thread of pid is in state want ('T'
 * takes a traced stop, 't', too). */
int bst_wait_all_threads(pid_t pid, char want, int timeout_ms);

/* ---- the module ------------------------------------------------------- */

/* The module file: $BFT_KO.  NULL if unset. */
const char *bst_ko_path(void);
bool bst_module_loaded(void);		/* listed in /proc/modules */
/* Whether the generic netlink controller lists the family (a dump, which
 * unlike a lookup by name never tries to autoload the module). */
int bst_family_listed(const char *name, bool *listed);
int bst_insmod(const char *ko);		/* finit_module() */
int bst_rmmod(void);			/* delete_module(O_NONBLOCK) */
/* Make sure the module is loaded (insmod $BFT_KO if it is not). */
int bst_ensure_loaded(void);

/* ---- a control session ------------------------------------------------ */

struct bst_session {
	struct bft_nl *nl;
	struct bft_nl_caps caps;
	struct bft_nl_opt opts[BFT_OPT_MAX + 1];	/* as found, by id */
	bool have_opt[BFT_OPT_MAX + 1];
};

/*
 * Load the module if needed, open a control handle, read the caps and
 * the options, and reset the module (a previous test may have failed
 * half-way).
 */
int bst_session_open(struct bst_session *s);
/* Reset, restore the options as found, close. */
void bst_session_close(struct bst_session *s);
/*
 * For tests that unload the module or lose their handle on the way:
 * whatever happened, leave the module loaded and idle, then close.
 */
void bst_session_close_loaded(struct bst_session *s);
/* A loopback port for this run, so that a lingering socket of an
 * earlier run cannot answer, free for TCP and UDP when chosen; salt
 * tells apart two tests of one run. */
int bst_run_port(int salt);
/*
 * Stop (if a session is active), detach every target, restore options as
 * found at open, and throw away whatever the rings still hold.
 */
int bst_reset(struct bst_session *s);

/* A mode command, printing the extack text on failure. */
int bst_mode(struct bst_session *s, int cmd);
/* BFT_CMD_START, owned by this session's socket unless persist. */
int bst_start(struct bst_session *s, bool persist);
/* Set an option, printing the extack text on failure. */
int bst_set_opt(struct bst_session *s, uint32_t id, uint64_t value);

/*
 * Whether the failure text holds one of the NULL-terminated words
 * (case-insensitive).  Prints the text either way, for the log.
 */
bool bst_text_mentions(const char *text, const char *const *words);
#define BST_MENTIONS(text, ...) \
	bst_text_mentions(text, (const char *const[]){ __VA_ARGS__, NULL })

/* The possible CPUs of this machine, as the kernel lists them. */
unsigned int bst_possible_cpus(void);

/* ---- probes ------------------------------------------------------------ */

struct bst_fn {
	const char *file;	/* path of the ELF file */
	const char *func;	/* function name */
	uint32_t method_id;
};

/*
 * Resolve fns[i] into probes[i] (flags BFT_PF_ALL, name = func), offsets
 * from bft_elf (after endbr64 where there is one).  probes[i].path points
 * at fns[i].file.
 */
int bst_resolve(const struct bst_fn *fns, size_t n, struct bft_nl_probe *probes);
/* Resolve and attach, printing the extack text on failure. */
int bst_attach_fns(struct bst_session *s, pid_t tgid,
		   const struct bst_fn *fns, size_t n);

/*
 * Start the spinner with argv, attach one full probe on spin_fn with
 * method_id, and BFT_CMD_START if start.
 */
int bst_spinner_traced(struct bst_session *s, struct bst_proc *p,
		       const char *const *argv, uint32_t method_id, bool start);

/* The file offset of a byte in no executable PT_LOAD segment of path
 * (but inside the file), for the "not executable" rejection. */
int bst_nonexec_offset(const char *path, uint64_t *offset);

/* ---- traces ------------------------------------------------------------ */

/*
 * One thread's records as the merge (bft_merge) delivered them: ENTER,
 * ENTER_NORET and EXIT with its run expanded into single exits, so the
 * sequence does not depend on how the kernel happened to group exits.
 */
enum bst_kind {
	BST_ENTER = 1,
	BST_NORET,
	BST_EXIT,
};

struct bst_ev {
	uint8_t kind;		/* enum bst_kind */
	uint32_t id;		/* method id (0 for an exit) */
	uint32_t cpu;
	uint64_t time_ns;	/* stream time (rounded down to the unit) */
};

/* The same thread as bft_calltree reconstructs it. */
struct bst_call {
	uint8_t kind;		/* enum bft_call_kind */
	uint8_t noret;
	uint8_t unwound;	/* EXIT: BFT_UNWIND_* reason, 0 if returned */
	uint8_t how;		/* THROW: BFT_THROW_* */
	uint32_t id;		/* ENTER: entered; EXIT: the frame closed;
				 * THROW: the innermost open frame */
	uint32_t exc;		/* THROW: exception type id, 0 if unknown */
	uint32_t depth;
	uint64_t time_ns;
};

/* A USDT probe hit: a MARK with its ARGs, as bft_calltree joins them. */
struct bst_usdt {
	uint32_t id;
	uint8_t nargs;
	uint16_t is_signed;	/* bit i: argument i is signed */
	uint16_t unread;	/* bit i: argument i could not be read */
	uint64_t args[BFT_USDT_MAX_ARGS];	/* signed ones sign-extended */
	uint64_t time_ns;
};

struct bst_thread {
	uint32_t tgid, tid;
	struct bst_ev *ev;
	size_t n, cap;
	struct bst_call *calls;
	size_t ncalls, calls_cap;
	struct bst_usdt *usdt;
	size_t nusdt, usdt_cap;
};

/* The last NAME record of a thread (uapi 2.2). */
struct bst_name {
	uint32_t tgid, tid;
	uint32_t count;		/* NAME records of it */
	char name[BFT_THREAD_NAME_MAX + 1];
};

/* A BREAK, LOST or GAP record (a data break for every thread). */
struct bst_mark {
	uint16_t kind;		/* BFT_REC_BREAK, BFT_REC_LOST, BFT_REC_GAP */
	uint32_t cpu;
	uint64_t value;		/* reason, count, expected seq */
	uint64_t time_ns;
};

struct bst_cpu {
	uint64_t bytes;
	uint64_t events;	/* ENTER + NORET + each exit */
	uint64_t lost;		/* sum of LOST counts */
	uint64_t breaks;
	uint64_t syncs;
	uint64_t first_time_ns;	/* of the first SYNC */
	uint64_t lost_records;	/* LOST records */
	uint64_t lost_synced;	/* of those, the ones a SYNC came right after */
	uint16_t last_kind;	/* of this CPU's latest record */
};

struct bst_trace {
	struct bst_thread *th;
	size_t nth;
	struct bst_mark *marks;
	size_t nmarks, marks_cap;
	struct bst_name *names;
	size_t nnames, names_cap;
	struct bst_cpu *cpu;
	uint32_t nr_cpus;
	uint64_t orphans;	/* bft_calltree: exits with no frame */
	uint64_t unbalanced;
	char err[256];		/* why collecting or decoding failed */
};

/*
 * Read every ring until it stays quiet for quiet_ms (at most max_ms),
 * decode the streams (a SYNC sequence gap or a malformed record is an
 * error), merge them by time and split them per thread.  Call after
 * BFT_CMD_STOP: then nothing is pending.
 */
int bst_collect(struct bst_session *s, int quiet_ms, int max_ms,
		struct bst_trace *t);
/* The same from per-CPU streams in memory (data[cpu] may be NULL). */
int bst_decode(struct bst_trace *t, uint32_t nr_cpus,
	       const uint8_t *const *data, const size_t *lens);
void bst_trace_free(struct bst_trace *t);
/*
 * The marks of t that are neither a LOST nor the stop's BREAK: after a
 * ring overflow a loss is the only data break.  The first in *first.
 */
size_t bst_marks_besides_losses(const struct bst_trace *t,
				const struct bst_mark **first);
/* The thread tid of process tgid, or NULL. */
const struct bst_thread *bst_trace_thread(const struct bst_trace *t,
					  uint32_t tgid, uint32_t tid);
/* The name the thread's NAME records gave it last, or NULL if none did. */
const char *bst_trace_name(const struct bst_trace *t, uint32_t tgid,
			   uint32_t tid);
/* Threads of tgid, in first-seen order, into out (up to cap); count. */
size_t bst_trace_threads_of(const struct bst_trace *t, uint32_t tgid,
			    const struct bst_thread **out, size_t cap);

/* "e5 n6 x x" for a sequence (for messages); malloc'ed. */
char *bst_ev_text(const struct bst_ev *ev, size_t n);
/* "e5 n6 x6 x5" for reconstructed calls (t5 a throw in 5, u5 a frame of 5
 * unwound); malloc'ed. */
char *bst_call_text(const struct bst_call *c, size_t n);

/*
 * The methods dump of tgid (0: every target): entries of attached probes
 * (live), and of detached ones the module keeps with BFT_PF_GONE until the
 * next start (gone).  0 or -errno.
 */
int bst_count_methods(struct bst_session *s, uint32_t tgid, size_t *live,
		      size_t *gone);

/* Monotonic clock in ns. */
uint64_t bst_now_ns(void);
void bst_sleep_ms(unsigned int ms);

/* ---- the tools of build/user ---------------------------------------- */

/* A whole file, NUL-terminated; malloc'ed, NULL if unreadable. */
char *bst_slurp(const char *path);
/* build/user/<name>, found next to the tests; malloc'ed. */
char *bst_tool_path(const char *name);
/* Run argv[0] (a tool of build/user) with output to log; its pid or -1. */
pid_t bst_spawn(const char *const *argv, const char *log);
/* Its exit status (0..255), 128 + signal, or -ETIMEDOUT (then killed). */
int bst_wait_exit(pid_t pid, int timeout_ms);
/* ---- session owners (session_test.c, bpf_session_test.c) ------------ */

/*
 * A child that runs start(arg) (which starts a session it then owns),
 * says so and waits to be killed.  Its pid once start returned 0, else -1.
 */
pid_t bst_child_starter(int (*start)(void *arg), void *arg);
/* SIGKILL *pid and reap it; 0 (and *pid = 0) if it died of that. */
int bst_kill_and_reap(pid_t *pid);
/* Whether a thread of pid is stopped (T or t). */
bool bst_any_stopped(pid_t pid);
/* Until no thread of pid is stopped: 0, -ETIMEDOUT if one stays, -ESRCH
 * if pid is gone. */
int bst_wait_none_stopped(pid_t pid, int timeout_ms);

/* Whether something accepts on 127.0.0.1:port within timeout_ms. */
bool bst_port_listening(int port, int timeout_ms);
/* A log file on stderr, each line as a TAP comment. */
void bst_show_log(const char *path);

/* ---- the BPF backend (bft_bpf.h) ------------------------------------- */

/*
 * A session of the tests' own ($BFT_BPF_PIN_DIR, by default
 * /sys/fs/bpf/bftrace-selftest), made fresh.  When this machine cannot run
 * BPF, 1 and the reason in why: the caller skips.  Else 0 or -errno (a
 * failure: the programs did not load, ...).
 */
int bst_bpf_open(struct bft_bpf **bp, char *why, size_t len);
/*
 * Attach func, a function of the test program itself, for a test that
 * traces its own calls: the caller is bound to the CPU it runs on first,
 * so every record is in one ring.  0 or -errno, said on stderr.
 */
int bst_bpf_attach_self(struct bft_bpf *b, const char *func,
			uint32_t method_id);
/* bpffs on /sys/fs/bpf, mounted if it is not (a guest's init may not). */
void bst_bpf_mount(void);
/* Close and unload the session. */
void bst_bpf_close(struct bft_bpf *b);
/*
 * The backend of a test variant that runs on either: the BPF backend
 * (*bp, and BFT_BACKEND=bpf for the tools the test spawns), or the module
 * (s) with BFT_OPT_MAX_DEPTH above depth frames.  1 and the reason in why
 * when the variant is to skip (no BPF here, BFT_BACKEND=bpf asks for the
 * BPF variants only, or BFT_BACKEND=inline for the inline ones); else 0
 * or -errno.
 */
int bst_backend_open(bool bpf, struct bst_session *s, struct bft_bpf **bp,
		     unsigned int depth, char *why, size_t len);
/* bst_collect for the BPF rings: seal, drain, decode. */
int bst_bpf_collect(struct bft_bpf *b, int quiet_ms, int max_ms,
		    struct bst_trace *t);

/*
 * The inline backend (bst_ops.c), through its table of operations, with a
 * registry of the test's own ($BFT_INLINE_DIR, a new temporary directory):
 * 0, 1 with why (a skip: BFT_BACKEND names another backend, or the inline
 * variants are not wanted here), or -errno.
 */
struct bft_backend_ops;
int bst_inline_open(void **hp, char **dirp, char *why, size_t len);
/* false with why when BFT_INLINE_VARIANTS=0 (the guests, mostly) */
bool bst_inline_wanted(char *why, size_t len);
void bst_inline_close(void *h, char *dir);
/* bst_collect() through any backend's table. */
int bst_ops_collect(const struct bft_backend_ops *ops, void *h, int quiet_ms,
		    int max_ms, struct bst_trace *t);
/*
 * The same in steps, for rings that must be read while a target runs
 * (the inline backend's die with their process): open before the target
 * starts, poll while it runs (each poll also keeps the status, whose
 * counters end with the target too), finish (drain, decode, free) after.
 * The first error is kept and finish returns it, with the reason in
 * t->err.
 */
struct bst_bufs;
struct bft_backend_rings;
struct bst_reader {
	const struct bft_backend_ops *ops;
	void *h;
	struct bft_backend_rings *r;
	struct bst_bufs *bb;
	uint32_t nr_cpus;
	int failed;
	char err[256];
	/* the last status with rings in it, taken at a poll (polls > 0) */
	struct bft_nl_status st;
	unsigned int polls;
};
int bst_reader_open(struct bst_reader *rd, const struct bft_backend_ops *ops,
		    void *h);
ssize_t bst_reader_poll(struct bst_reader *rd, int timeout_ms);
/* finish keeps rd->st; free releases everything, and may follow finish */
int bst_reader_finish(struct bst_reader *rd, int quiet_ms, int max_ms,
		      struct bst_trace *t);
void bst_reader_free(struct bst_reader *rd);
/* 0 when every executable file mapping of pid holds its file's bytes. */
int bst_text_matches_files(pid_t pid);

#endif /* BFT_SELFTEST_H */
