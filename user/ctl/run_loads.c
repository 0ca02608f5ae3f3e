// SPDX-License-Identifier: GPL-2.0
/*
 * bfctl run, following the libraries a process loads after its start
 * (dlopen(3)): the patterns apply to them as to the program's first ones.
 *
 * The loader calls _dl_debug_state() with r_debug.r_state == RT_ADD before
 * it maps a library, and with RT_CONSISTENT once the library and what it
 * needs are mapped, before their relocation and their constructors.  The
 * hold point of run.c stays armed for the session: a breakpoint on that
 * function, whose stop holds the loading thread while the patterns are
 * resolved over the new maps and the new functions attached.  So the
 * library's constructors, and the first call any thread makes into it,
 * are traced.  Threads that load nothing run on meanwhile.
 *
 * A dlclose() that unmaps a library stops there too, with RT_DELETE and
 * then RT_CONSISTENT: the probes on what is no longer mapped are then
 * detached (where the backend can detach some probes alone), their names
 * kept in the method table.
 *
 * The breakpoint must not be lifted to let the thread through, or another
 * thread could pass it meanwhile: _dl_debug_state() is a lone `ret` (it
 * exists only to be trapped), so the stop ends with the `ret` done by
 * hand.  A loader whose function is anything else is held once, at the
 * start, as before.
 *
 * A process that carries the breakpoint is killed with bfctl should bfctl
 * die (PTRACE_O_EXITKILL): left running, it would die of SIGTRAP at its
 * next dlopen() or dlclose().  When the command ends, the breakpoint is
 * lifted from every process still running before it is let go.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "output.h"
#include "run.h"
#include "symbols/bft_elf.h"
#include "symbols/bft_maps.h"

#define OP_RET	0xc3
#define OP_INT3	0xcc

/* x86-64, without a shadow stack the `ret` done by hand would desync */
static const char *why_not(pid_t pid)
{
	char fn[64], line[256];
	unsigned char id[EI_NIDENT];
	const char *why = NULL;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/exe", (int)pid);
	f = fopen(fn, "re");
	if (!f || fread(id, 1, sizeof(id), f) != sizeof(id) || id[EI_CLASS] != ELFCLASS64)
		why = "it is no 64-bit program";
	if (f)
		fclose(f);
	if (why)
		return why;
	snprintf(fn, sizeof(fn), "/proc/%d/status", (int)pid);
	f = fopen(fn, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "x86_Thread_features:", 20) && strstr(line, "shstk"))
			why = "it runs with a shadow stack";
	if (f)
		fclose(f);
	return why;
}

int run_loads_arm(struct run *r, pid_t pid, struct run_loader *ld)
{
	const char *why;
	long word;
	int rc;

	ld->armed = false;
	if (!r->follow || !ld->bp || !ld->r_debug)
		return 0;
	why = why_not(pid);
	if (why) {
		vlog(r->c, 1, "run: process %d: %s; libraries it loads later are not followed",
		     (int)pid, why);
		return 0;
	}
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)ld->bp, NULL);
	if (errno)
		return -errno;
	/* a lone `ret`, or `endbr64; ret` where glibc is built for CET */
	if ((word & 0xffffffffffL) == 0xc3fa1e0ff3L) {
		ld->bp += BFT_ENDBR64_LEN;
		word >>= 8 * BFT_ENDBR64_LEN;
	}
	if ((word & 0xff) != OP_RET) {
		vlog(r->c, 1, "run: process %d: the loader's _dl_debug_state is no lone ret (%#lx); libraries it loads later are not followed",
		     (int)pid, word & 0xff);
		return 0;
	}
	rc = run_exitkill(pid, true);
	if (!rc)
		rc = run_poke_byte(pid, ld->bp, OP_INT3, NULL);
	if (rc) {
		err_msg("run: process %d: arming the loader hook: %s; libraries it loads later are not followed",
			(int)pid, strerror(-rc));
		run_exitkill(pid, false);
		return rc;
	}
	ld->armed = true;
	ld->adding = false;
	vlog(r->c, 2, "run: process %d: loads followed at %#" PRIx64, (int)pid, ld->bp);
	return 0;
}

bool run_loads_hit(pid_t tid, const struct run_loader *ld)
{
	struct user_regs_struct regs;

	return ld->bp && !ptrace(PTRACE_GETREGS, tid, NULL, &regs) &&
	       regs.rip == ld->bp + 1;
}

/* Do the `ret` the breakpoint stands on. */
static int step_ret(pid_t tid)
{
	struct user_regs_struct regs;
	long to;

	if (ptrace(PTRACE_GETREGS, tid, NULL, &regs))
		return -errno;
	errno = 0;
	to = ptrace(PTRACE_PEEKDATA, tid, (void *)regs.rsp, NULL);
	if (errno)
		return -errno;
	regs.rip = (unsigned long)to;
	regs.rsp += 8;
	return ptrace(PTRACE_SETREGS, tid, NULL, &regs) ? -errno : 0;
}

struct unmapped {
	uint32_t tgid;
	const struct bft_maps *maps;
	uint32_t *ids;
	size_t n, cap;
};

/* path, as the method table names it, is one of the objects mapped */
static bool still_mapped(const struct bft_maps *m, const char *path)
{
	struct stat st;
	bool known = !stat(path, &st);

	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->obj[i].path, path) ||
		    (known && m->obj[i].ino == st.st_ino))
			return true;
	return false;
}

static int unmapped_cb(const struct bft_nl_method *m, void *arg)
{
	struct unmapped *u = arg;

	if (m->tgid != u->tgid || (m->flags & BFT_PF_GONE) ||
	    still_mapped(u->maps, m->path))
		return 0;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		uint32_t *v = realloc(u->ids, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		u->ids = v;
		u->cap = cap;
	}
	u->ids[u->n++] = m->method_id;
	return 0;
}

/*
 * After a dlclose(): the probes on what the process no longer maps go,
 * their names kept in the method table, so that they count against no
 * limit and a library opened again is attached afresh.
 */
static void detach_unmapped(struct run *r, pid_t tgid)
{
	struct unmapped u = { .tgid = (uint32_t)tgid };
	struct bft_maps m;
	char err[256];
	int rc;

	if (bft_maps_read(tgid, &m, err, sizeof(err))) {
		vlog(r->c, 1, "%s: process %d unloaded a library: %s", current_cmd->name,
		     (int)tgid, err);
		return;
	}
	u.maps = &m;
	rc = ctl_get_methods(r->c, unmapped_cb, &u);
	if (rc) {
		err_msg("%s: process %d unloaded a library; reading the method table: %s",
			current_cmd->name, (int)tgid, ctl_errmsg(r->c));
		goto out;
	}
	if (u.n)
		rc = ctl_detach_some(r->c, (uint32_t)tgid, u.ids, u.n);
	if (rc == -EOPNOTSUPP)
		vlog(r->c, 1, "%s: process %d unloaded a library; the %s backend cannot detach its %zu probes alone: they stay until the end",
		     current_cmd->name, (int)tgid, ctl_backend_name(r->c), u.n);
	else if (rc)
		err_msg("%s: process %d unloaded a library; detaching its %zu probes: %s",
			current_cmd->name, (int)tgid, u.n, ctl_errmsg(r->c));
	else if (u.n)
		vlog(r->c, 1, "%s: process %d unloaded a library: %zu probes detached",
		     current_cmd->name, (int)tgid, u.n);
out:
	free(u.ids);
	bft_maps_free(&m);
}

static int32_t r_state(pid_t tid, const struct run_loader *ld)
{
	long state;

	errno = 0;
	state = ptrace(PTRACE_PEEKDATA, tid, (void *)(ld->r_debug + R_STATE_OFFSET), NULL);
	return errno ? -1 : (int32_t)state;	/* unknown: no resolve */
}

bool run_loads_due(pid_t tid, const struct run_loader *ld)
{
	return r_state(tid, ld) == RT_CONSISTENT && (ld->adding || ld->deleting);
}

int run_loads_state(struct run *r, pid_t tid, pid_t tgid, struct run_loader *ld)
{
	int32_t state = r_state(tid, ld);
	int rc, attached = 0;
	size_t searched;

	vlog(r->c, 3, "%s: process %d, thread %d: loader hook, r_state %d",
	     current_cmd->name, (int)tgid, (int)tid, (int)state);
	if (state == RT_ADD) {
		ld->adding = true;
	} else if (state == RT_DELETE) {
		ld->deleting = true;
	} else if (state == RT_CONSISTENT && ld->deleting) {
		ld->deleting = false;
		detach_unmapped(r, tgid);
	} else if (state == RT_CONSISTENT && ld->adding) {
		/* a dlclose() ends in RT_CONSISTENT too: only a load counts */
		ld->adding = false;
		vlog(r->c, 1, "%s: process %d loaded a library: resolving the patterns again",
		     current_cmd->name, (int)tgid);
		searched = r->searched;
		rc = run_attach(r, tgid);
		r->searched = searched;	/* the same image, searched again */
		if (rc && rc != EXIT_NOMATCH) {
			/* probes_attach() rolled the process back, and said so */
			err_msg("%s: process %d: attaching what the patterns select in the library it loaded failed (above)",
				current_cmd->name, (int)tgid);
			attached = RUN_LOADS_LOST;
		} else {
			attached = !rc;
		}
	}
	return attached;
}

int run_loads_on_hit(struct run *r, pid_t tid, pid_t tgid, struct run_loader *ld)
{
	int attached = run_loads_state(r, tid, tgid, ld);
	int rc = step_ret(tid);

	return rc ? rc : attached;
}

/* Lift the hook (tid stopped): 0 or -errno. */
static int disarm(pid_t tid, struct run_loader *ld)
{
	int rc;

	if (!ld->armed)
		return 0;
	rc = run_poke_byte(tid, ld->bp, OP_RET, NULL);
	if (!rc)
		ld->armed = false;
	return rc;
}

int run_loads_let_go(pid_t tid, struct run_loader *ld, bool trapped)
{
	bool on_hook = trapped && run_loads_hit(tid, ld);
	int rc = disarm(tid, ld);

	if (!rc && on_hook)
		rc = step_ret(tid);
	return rc ? rc : on_hook;
}
