/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_session: the inline backend's registry, a directory (default
 * /run/bftrace/inline, $BFT_INLINE_DIR for tests; root's, mode 0700) with
 * one file per target (<tgid>: struct bfi_target as text) and a session
 * file (mode, options, owner).  Every change happens under an flock on
 * the directory's lock file, every file is written to a temporary name and
 * renamed, so a reader never sees a torn one.  Targets whose process is
 * gone (or whose pid now names another process) are dropped when found.
 *
 * Conventions: 0 or -errno; bfi_session_errmsg() says why.
 */
#ifndef BFI_SESSION_H
#define BFI_SESSION_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/bftrace.h>

#include "capture/bft_owner.h"
#include "inline/bfi_target.h"

/* Targets per session; each has BFI_NSLOTS streams ("CPUs" to readers). */
#define BFI_MAX_TARGETS		16u
#define BFI_STREAMS		(BFI_MAX_TARGETS * BFI_NSLOTS)

/* What the session file holds. */
struct bfi_state {
	uint8_t mode;		/* enum bft_mode */
	uint8_t break_reason;	/* BFT_BREAK_* of the last break */
	uint32_t gen;		/* +1 per mode change, as in the areas */
	uint32_t next_index;	/* the stream block the next target gets */
	struct bft_owner owner;	/* tgid 0: persistent, or no session */
	uint32_t guard;		/* the owner's guard process, 0: none */
	uint64_t opts[BFT_OPT_MAX + 1];
};

struct bfi_session {
	char dir[PATH_MAX];
	int lock_fd;		/* the lock file, open for the handle's life */
	int locked;		/* depth of bfi_session_lock() */
	bool nowait;		/* lock: -EWOULDBLOCK rather than wait */
	bool own;		/* this handle started the session (owner) */
	struct bfi_state st;
	struct bfi_target *targets;	/* as last loaded, by tgid */
	size_t ntargets;
	char err[512];
	char notice[512];	/* what the last attach did, for people */
};

/* $BFT_INLINE_DIR, else /run/bftrace/inline. */
const char *bfi_session_dir(void);

/*
 * Open the registry.  create: make the directory if missing; else
 * -ENOENT without it.  The state and targets are loaded (dead ones
 * reaped).
 */
int bfi_session_open(struct bfi_session **sp, bool create, char *err,
		     size_t errlen);
/*
 * The same for a reader that must not stall behind an attach, which holds
 * the lock while it patches (seconds for a thousand functions): when the
 * lock is taken, -EWOULDBLOCK at once.
 */
int bfi_session_open_nowait(struct bfi_session **sp, char *err,
			    size_t errlen);
void bfi_session_close(struct bfi_session *s);
const char *bfi_session_errmsg(const struct bfi_session *s);
/* Fill s->err with the formatted reason; returns e. */
int bfi_session_err(struct bfi_session *s, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Take the directory's lock (nests) and load everything again. */
int bfi_session_lock(struct bfi_session *s);
void bfi_session_unlock(struct bfi_session *s);
/* Read the session file and every target file (reaping the dead). */
int bfi_session_load(struct bfi_session *s);
/* Write the session file (under the lock). */
int bfi_session_save(struct bfi_session *s);
/* The options' defaults (kmod/bft_rules.h), mode INITIALIZING. */
void bfi_state_default(struct bfi_state *st);

/* t->index before its first save: no stream block yet. */
#define BFI_NO_INDEX		UINT32_MAX

/*
 * Take t (its arrays too) into the loaded targets, before its first save;
 * the copy in s, or NULL on -ENOMEM (t is then still the caller's).
 */
struct bfi_target *bfi_session_target_add(struct bfi_session *s,
					  const struct bfi_target *t);
/* The loaded target of tgid, or NULL. */
struct bfi_target *bfi_session_target(struct bfi_session *s, uint32_t tgid);
/*
 * Write t's file (under the lock).  A target new to the registry gets its
 * stream block (t->index) here: -ENOSPC past BFI_MAX_TARGETS in one
 * session.
 */
int bfi_session_target_save(struct bfi_session *s, struct bfi_target *t);
int bfi_session_target_drop(struct bfi_session *s, uint32_t tgid);
/* Patches whose jump is written, over every target. */
unsigned int bfi_session_probes(const struct bfi_session *s);

/* The text form of a target (bfi_target_file.c). */
int bfi_target_write(const struct bfi_target *t, FILE *f);
int bfi_target_parse(struct bfi_target *t, FILE *f, char *err,
		     size_t errlen);

/*
 * A mode command (BFT_CMD_START.._UNSUSPEND, _STOP) with the transitions
 * of bft_mode_next(): the control word goes into every target's area
 * (/proc/PID/mem), pause and unpause signal the targets as the module
 * does.  owner: who starts the session (START only; NULL: persistent).
 * Takes the lock.
 */
int bfi_session_set_mode(struct bfi_session *s, int cmd,
			 const struct bft_owner *owner, uint8_t *mode);
/*
 * The control word (and, when it says TRACING, the options the recorder
 * reads) into one target's area; the patcher calls it for a target new
 * to a running session too.  -ESRCH: it is gone.
 */
int bfi_area_write_ctl(struct bfi_session *s, const struct bfi_target *t);

/* The owner's death ends a session without persist (bfi_session_owner.c). */
void bfi_session_guard_start(struct bfi_session *s);
/* Whoever looks first after the owner died stops the session. */
int bfi_session_owner_reap(struct bfi_session *s);
/* The owner's handle closes: its session ends. */
void bfi_session_owner_release(struct bfi_session *s);

#endif /* BFI_SESSION_H */
