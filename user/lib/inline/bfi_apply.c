// SPDX-License-Identifier: GPL-2.0
/*
 * bfi_apply: the inline backend's attach, in the order
 * docs/inline-probes.md gives: refuse what would harm the target, plan
 * every function from its file, stop the world clear of the bytes to
 * rewrite, map the area and the code areas, check the bytes in memory
 * against the file, write the stubs, record, write the jumps, let go.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "inline/bfi_object.h"
#include "symbols/bft_maps.h"
#include "inline/bfi_apply.h"
#include "inline/bfi_proc.h"
#include "inline/bfi_ptrace.h"
#include "inline/bfi_remote.h"
#include "inline/bfi_vdso.h"
#include "inline/bfi_rec_blob.h"
#include "inline/bfi_reloc.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

/* Functions where r11 is live on entry, by their own convention. */
static const char *const r11_live[] = {
	"__x86_indirect_thunk_*", "__x86_return_thunk", "__morestack",
	"_dl_runtime_*", "__x86_indirect_call_thunk_*",
};

struct planned {
	const struct bft_nl_probe *probe;	/* from the request, or ours */
	int *result;
	struct bfi_plan plan;	/* in the target's addresses */
	uint64_t lo, hi;	/* the object's text in the target */
	uint8_t mem[16];	/* the bytes in memory at plan.at */
};

/* The unwinder's stand-in hook (patch_unwinder_later). */
struct fallback {
	struct bft_nl_probe probe;
	char path[4096];
	int result;
};

struct patching {
	struct bfi_target *t;
	const struct bfi_patch_opts *o;
	struct bft_entry *dec;		/* the objects' branch targets */
	struct bfi_reloc *rel;		/* the plans and stubs */
	struct bfi_object *objs;
	size_t nobjs;
	struct planned *pl;
	size_t npl;
	struct bfi_world *w;
	struct bfi_patch_report *rep;
	struct fallback fb;	/* pthread_exit for the unwinder */
	struct fallback drain[2]; /* exit(), abort(): wait for the reader */
	char *err;
	size_t errlen;
};

static const struct bfi_rec_hdr *patch_rec_hdr(void)
{
	return (const struct bfi_rec_hdr *)bfi_rec_bin;
}

static uint64_t patch_text_bytes(void)
{
	return BFI_PAGE_UP((uint64_t)bfi_rec_bin_len);
}

static void patch_refuse(struct patching *pc, enum bfi_refusal why,
			 const char *name, const char *detail)
{
	if ((unsigned int)why < BFI_REFUSE_NRULES)
		pc->rep->refused[why]++;
	else
		pc->rep->other++;
	if (!pc->rep->first[0])
		snprintf(pc->rep->first, sizeof(pc->rep->first), "%s: %s%s%s",
			 name ? name : "?", bfi_refusal_why(why),
			 detail && *detail ? ": " : "", detail ? detail : "");
}

static struct bfi_object *patch_object(struct patching *pc, const char *path)
{
	struct bfi_object *o;

	for (size_t i = 0; i < pc->nobjs; i++)
		if (!strcmp(pc->objs[i].path, path))
			return &pc->objs[i];
	o = realloc(pc->objs, (pc->nobjs + 1) * sizeof(*o));
	if (!o)
		return NULL;
	pc->objs = o;
	o = &pc->objs[pc->nobjs];
	if (bfi_object_open(o, path, pc->err, pc->errlen))
		return NULL;
	pc->nobjs++;
	return o;
}

static bool patch_r11_live(const char *name)
{
	for (size_t i = 0; i < sizeof(r11_live) / sizeof(r11_live[0]); i++)
		if (!fnmatch(r11_live[i], name, 0))
			return true;
	return false;
}

static bool patch_known(const struct bfi_target *t, uint64_t at)
{
	for (size_t i = 0; i < t->npatches; i++)
		if (t->patches[i].at == at && t->patches[i].live)
			return true;
	return false;
}

/*
 * Plan probe p from its file: 0 planned, 1 refused (counted), 2 its object
 * not loaded yet (counted), -errno.
 */
static int patch_plan_one(struct patching *pc, const struct bft_nl_probe *p,
			  int *result, pid_t pid)
{
	struct bfi_object *o = patch_object(pc, p->path);
	struct planned *pl = &pc->pl[pc->npl];
	struct bft_elf_func f;
	uint64_t addr, delta;
	uint8_t *code;
	int rc;

	if (!o)
		return -ENOENT;
	rc = bfi_object_func(o, p->offset, &f, pc->err, pc->errlen);
	if (rc)
		return rc;
	if (patch_r11_live(f.name)) {
		patch_refuse(pc, BFI_REFUSE_INSN, f.name,
			     "r11 is live on its entry");
		*result = -EOPNOTSUPP;
		return 1;
	}
	rc = bfi_object_targets(o, pc->dec);
	if (rc)
		return rc;
	code = malloc(f.size);
	if (!code)
		return -ENOMEM;
	rc = bfi_object_read(o, f.offset, code, f.size);
	if (!rc)
		rc = bfi_reloc_plan(pc->rel, code, f.size, f.addr, &o->targets,
				    &pl->plan);
	free(code);
	if (rc)
		return rc;
	if (pl->plan.why != BFI_REFUSE_NONE) {
		patch_refuse(pc, pl->plan.why, f.name, pl->plan.detail);
		*result = -EOPNOTSUPP;
		return 1;
	}
	rc = bfi_object_addr(o, pid, f.offset, &addr, &pl->lo, &pl->hi);
	if (rc) {
		/* a library it will load later: uprobes could wait for it,
		 * a rewrite cannot (a library opened later: issue 33) */
		patch_refuse(pc, BFI_REFUSE_NRULES, f.name,
			     "its object is not loaded in the process yet");
		*result = -ENOENT;
		return 2;
	}
	/* the plan is in link-time addresses: move it to the target's */
	delta = addr - f.addr;
	pl->plan.func += delta;
	pl->plan.at += delta;
	if (patch_known(pc->t, pl->plan.at)) {
		*result = -EEXIST;
		return 1;
	}
	for (size_t k = 0; k < pc->npl; k++) {
		if (pc->pl[k].plan.at == pl->plan.at) {
			*result = -EEXIST;
			return 1;
		}
	}
	pl->probe = p;
	pl->result = result;
	pc->npl++;
	return 0;
}

static int patch_area_map(struct patching *pc, pid_t pid)
{
	struct bfi_target *t = pc->t;
	struct bfi_area a = {
		.magic = BFI_MAGIC, .version = BFI_VERSION,
		.nslots = BFI_NSLOTS, .ring_size = pc->o->ring_size,
		.shadow_depth = BFI_SHADOW_DEPTH,
		.max_depth = pc->o->max_depth, .res_ns = pc->o->res_ns,
		.flush_ns = pc->o->flush_ns, .tgid = (uint32_t)pid,
	};
	struct bfi_live live = { .ctl = pc->o->ctl };
	char e2[128];
	int rc;

	a.size = BFI_AREA_SIZE(pc->o->ring_size);
	rc = bfi_remote_mmap(pc->w, 0, 0, a.size, PROT_READ | PROT_WRITE,
			     &t->area, pc->err, pc->errlen);
	if (rc)
		return rc;
	t->area_size = a.size;
	t->ring_size = a.ring_size;
	t->nslots = a.nslots;
	/* a fork child reads 0 in the control word: it records nothing */
	rc = bfi_remote_madvise(pc->w, t->area + BFI_LIVE_OFF, BFI_PAGE,
				MADV_WIPEONFORK);
	if (rc) {
		snprintf(pc->err, pc->errlen, "madvise(MADV_WIPEONFORK) in the "
			 "target failed: %s", strerror(-rc));
		return rc;
	}
	if (bfi_vdso_clock((pid_t)pid, &a.vdso_clock, e2, sizeof(e2)))
		a.vdso_clock = 0;
	a.tid_off = t->tid_off;
	a.no_ret = t->no_ret;
	rc = bfi_mem_write(pc->w, t->area, &a, sizeof(a));
	if (!rc)
		rc = bfi_mem_write(pc->w, t->area + BFI_LIVE_OFF, &live,
				   sizeof(live));
	if (rc)
		snprintf(pc->err, pc->errlen, "cannot write the area into "
			 "process %d: %s", (int)pid, strerror(-rc));
	return rc;
}

/* The code area within rel32 reach of [lo, hi), mapped on first need. */
static struct bfi_code_area *patch_code_area(struct patching *pc, uint64_t lo,
					     uint64_t hi)
{
	struct bfi_target *t = pc->t;
	const uint64_t reach = (1ULL << 31) - BFI_CODE_SIZE - BFI_PAGE;
	struct bfi_code_area *ca;
	struct bfi_code c = { .magic = BFI_MAGIC };
	uint64_t addr;
	int rc;

	for (size_t i = 0; i < t->ncodes; i++) {
		ca = &t->codes[i];
		if (ca->addr + BFI_CODE_SIZE <= lo + reach && ca->addr + reach >= hi &&
		    ca->used + BFI_STUB_MAX <= ca->size)
			return ca;
	}
	rc = bfi_remote_mmap(pc->w, lo, hi, BFI_CODE_SIZE,
			     PROT_READ | PROT_WRITE, &addr, pc->err,
			     pc->errlen);
	if (rc)
		return NULL;
	c.area = t->area;
	c.text = addr + BFI_TEXT_OFF;
	c.exit = c.text + patch_rec_hdr()->exit_off;
	c.stubs_used = BFI_TEXT_OFF + patch_text_bytes();
	rc = bfi_mem_write(pc->w, addr, &c, sizeof(c));
	if (!rc)
		rc = bfi_mem_write(pc->w, c.text, bfi_rec_bin, bfi_rec_bin_len);
	if (!rc)
		rc = bfi_remote_mprotect(pc->w, addr, BFI_CODE_SIZE,
					 PROT_READ | PROT_EXEC);
	if (rc) {
		snprintf(pc->err, pc->errlen, "cannot make the code area "
			 "executable in the target: %s (W^X policy: MDWE or "
			 "SELinux execmem?)", strerror(-rc));
		return NULL;
	}
	ca = realloc(t->codes, (t->ncodes + 1) * sizeof(*ca));
	if (!ca)
		return NULL;
	t->codes = ca;
	ca = &t->codes[t->ncodes++];
	*ca = (struct bfi_code_area){ .addr = addr, .size = BFI_CODE_SIZE,
				      .used = c.stubs_used };
	return ca;
}

static int patch_method_add(struct patching *pc, const struct bft_nl_probe *p,
			    uint32_t *index)
{
	struct bfi_target *t = pc->t;
	struct bfi_method m = { .id = p->method_id, .flags = p->flags };
	struct bfi_method_rec *mr;
	uint32_t n;
	int rc;

	if (t->nmethods >= BFI_MAX_METHODS)
		return -E2BIG;
	mr = realloc(t->methods, (t->nmethods + 1) * sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	t->methods = mr;
	mr = &t->methods[t->nmethods];
	*mr = (struct bfi_method_rec){
		.id = p->method_id, .flags = p->flags, .offset = p->offset,
		.path = strdup(p->path), .name = strdup(p->name ? p->name : ""),
	};
	if (!mr->path || !mr->name) {
		free(mr->path);
		free(mr->name);
		return -ENOMEM;
	}
	*index = (uint32_t)t->nmethods;
	rc = bfi_mem_write(pc->w, t->area + BFI_METHODS_OFF +
			   *index * (uint64_t)sizeof(m), &m, sizeof(m));
	if (rc)
		return rc;
	t->nmethods++;
	n = (uint32_t)t->nmethods;
	return bfi_mem_write(pc->w, t->area + offsetof(struct bfi_area,
						       nmethods), &n, sizeof(n));
}

/* Stub and method of one planned function; the jump is written later. */
static int patch_stub(struct patching *pc, struct planned *pl,
		      const struct bft_nl_probe *p, int *result)
{
	struct bfi_target *t = pc->t;
	struct bfi_code_area *ca;
	struct bfi_patch *pt;
	uint8_t buf[BFI_STUB_MAX];
	uint64_t stub, enter;
	uint32_t index;
	size_t len;
	int rc;

	rc = bfi_mem_read(pc->w, pl->plan.at, pl->mem, pl->plan.len);
	if (rc)
		return rc;
	if (memcmp(pl->mem, pl->plan.orig, pl->plan.len)) {
		patch_refuse(pc, BFI_REFUSE_NRULES, p->name,
			     "its bytes in memory differ from the file's (a "
			     "uprobe's int3, or code the program changed)");
		*result = -EOPNOTSUPP;
		return 1;
	}
	ca = patch_code_area(pc, pl->lo, pl->hi);
	if (!ca)
		return -ENOMEM;
	rc = patch_method_add(pc, p, &index);
	if (rc)
		return rc;
	stub = ca->addr + ca->used;
	enter = ca->addr + BFI_TEXT_OFF + patch_rec_hdr()->enter_off;
	rc = bfi_stub_build(pc->rel, &pl->plan, stub, index, enter, buf,
			    sizeof(buf), &len);
	if (rc)
		return rc;
	rc = bfi_mem_write(pc->w, stub, buf, len);
	if (rc)
		return rc;
	ca->used += (len + 15) & ~(size_t)15;
	pt = realloc(t->patches, (t->npatches + 1) * sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	t->patches = pt;
	pt = &t->patches[t->npatches++];
	*pt = (struct bfi_patch){ .at = pl->plan.at, .stub = stub,
				  .len = pl->plan.len, .index = index };
	memcpy(pt->orig, pl->plan.orig, sizeof(pt->orig));
	*result = 0;
	return 0;
}

static int patch_jumps(struct patching *pc)
{
	struct bfi_target *t = pc->t;
	int rc = 0;

	for (size_t i = 0; i < t->npatches && !rc; i++) {
		struct bfi_patch *pt = &t->patches[i];
		uint8_t jmp[5];

		if (pt->live)
			continue;
		rc = bfi_stub_jump(pt->at, pt->stub, jmp);
		if (!rc)
			rc = bfi_mem_write(pc->w, pt->at, jmp, sizeof(jmp));
		if (!rc)
			pt->live = 1;
	}
	for (size_t i = 0; i < t->ncodes && !rc; i++)
		rc = bfi_mem_write(pc->w, t->codes[i].addr +
				   offsetof(struct bfi_code, stubs_used),
				   &t->codes[i].used, sizeof(uint64_t));
	return rc;
}

/* What attach needs of the target's C library, from one look at its maps. */
struct libc_facts {
	char path[4096];	/* libc, or the static executable */
	bool exit_found, pexit_found, abort_found;
	struct bft_elf_func exit_fn, pexit_fn, abort_fn;
	int64_t tid_off;
	bool cancel;		/* some object imports pthread_cancel */
};

/* The C library's exit(), abort(), pthread_exit(), thread id offset. */
static void patch_scan_object(struct bfi_object *o, const char *path,
			      struct libc_facts *lf)
{
	snprintf(lf->path, sizeof(lf->path), "%s", path);
	lf->exit_found = !bft_elf_find_func(o->elf, "exit", &lf->exit_fn);
	lf->abort_found = !bft_elf_find_func(o->elf, "abort", &lf->abort_fn);
	lf->pexit_found = !bft_elf_find_func(o->elf, "pthread_exit",
					     &lf->pexit_fn);
	bfi_object_tid_off(o, &lf->tid_off);
}

/*
 * The C library: a shared object named libc, or the executable itself
 * when it is static (the first object, when no libc is mapped).  With
 * need_cancel, every object is asked whether it imports pthread_cancel.
 * One read of the maps, one open of each object looked at.
 */
static int patch_scan(struct patching *pc, pid_t pid, bool need_cancel,
		      struct libc_facts *lf)
{
	struct bft_maps m;
	bool libc_seen = false;
	int rc;

	memset(lf, 0, sizeof(*lf));
	rc = bft_maps_read(pid, &m, pc->err, pc->errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < m.n; i++) {
		const char *base = strrchr(m.obj[i].path, '/');
		bool libc = base && !strncmp(base + 1, "libc", 4) &&
			    (base[5] == '.' || base[5] == '-');
		struct bfi_object o;
		char e[64];

		if (!libc && i && !need_cancel)
			continue;
		if (bfi_object_open(&o, m.obj[i].open_path, e, sizeof(e)))
			continue;
		if (need_cancel)
			lf->cancel |= bfi_object_imports(&o, "pthread_cancel");
		/* the executable first; a libc after it takes its place */
		if ((libc && !libc_seen) || i == 0) {
			patch_scan_object(&o, m.obj[i].open_path, lf);
			libc_seen |= libc;
		}
		bfi_object_close(&o);
	}
	bft_maps_free(&m);
	return 0;
}

/*
 * The unwinder's library (libgcc_s) is not loaded yet: glibc opens it in
 * pthread_exit and pthread_cancel, the only ways a C program unwinds, and
 * its hooks cannot be rewritten before it is there.  pthread_exit, in the
 * C library that is loaded, stands in for them: at its entry the thread's
 * returns are put back, as the FORCED hook does, before any unwinding.  A
 * process that can cancel a thread (pthread_cancel: the cancelled thread
 * unwinds with no call of its own to hook) gets no return probes.
 */
static int patch_unwinder_later(struct patching *pc, pid_t pid,
				const struct libc_facts *lf,
				bool *hook_refused)
{
	int rc;

	if (lf->cancel || !lf->pexit_found) {
		*hook_refused = true;
		return 0;
	}
	snprintf(pc->fb.path, sizeof(pc->fb.path), "%s", lf->path);
	pc->fb.probe = (struct bft_nl_probe){
		.path = pc->fb.path, .offset = lf->pexit_fn.offset,
		.flags = BFT_PF_HOOK_FORCED,
		.name = "pthread_exit (for the unwinder)",
	};
	rc = patch_plan_one(pc, &pc->fb.probe, &pc->fb.result, pid);
	if (rc)
		*hook_refused = true;
	return rc == -ENOMEM ? rc : 0;
}

/*
 * The C library's exit() and abort() (std::terminate, a failed assert),
 * once per target: the rings are in the process's memory, which its end
 * takes with it, so these wait there for the reader to take them
 * (BFI_MF_DRAIN).  A process that ends otherwise (_exit, another fatal
 * signal) loses what no reader took yet.
 */
static int patch_exit_drain(struct patching *pc, pid_t pid,
			    const struct libc_facts *lf)
{
	const struct {
		bool found;
		const struct bft_elf_func *fn;
		const char *name;
	} ends[2] = {
		{ lf->exit_found, &lf->exit_fn, "exit (waits for the reader)" },
		{ lf->abort_found, &lf->abort_fn,
		  "abort (waits for the reader)" },
	};
	int rc;

	for (size_t i = 0; i < pc->t->nmethods; i++)
		if (pc->t->methods[i].flags & BFI_MF_DRAIN)
			return 0;
	for (size_t k = 0; k < 2; k++) {
		struct fallback *d = &pc->drain[k];

		if (!ends[k].found)
			continue;	/* nothing to wait in: tails may be lost */
		snprintf(d->path, sizeof(d->path), "%s", lf->path);
		d->probe = (struct bft_nl_probe){
			.path = d->path, .offset = ends[k].fn->offset,
			.flags = BFI_MF_DRAIN, .name = ends[k].name,
		};
		rc = patch_plan_one(pc, &d->probe, &d->result, pid);
		if (rc == -ENOMEM)
			return rc;
	}
	return 0;
}

static void patch_free(struct patching *pc)
{
	for (size_t i = 0; i < pc->nobjs; i++)
		bfi_object_close(&pc->objs[i]);
	free(pc->objs);
	free(pc->pl);
	bft_entry_close(pc->dec);
	bfi_reloc_close(pc->rel);
}

/* The process facts that decide what may be done to it. */
static int patch_vet(struct bfi_target *t, pid_t pid, bool *shstk,
		     char *err, size_t errlen)
{
	struct bfi_proc_info pi;
	int rc = bfi_proc_probe(pid, &pi, err, errlen);

	if (rc)
		return rc;
	if (pi.seccomp == 2) {
		snprintf(err, errlen, "process %d runs under a seccomp filter, "
			 "which could kill it for the system calls the inline "
			 "backend makes in it; use a uprobe backend", (int)pid);
		return -EPERM;
	}
	if (pi.group_stop) {
		snprintf(err, errlen, "process %d is stopped (SIGSTOP); "
			 "continue it first", (int)pid);
		return -EBUSY;
	}
	if (t->start && t->start != pi.start) {
		snprintf(err, errlen, "process %d is not the one patched "
			 "before (it exec'd, or its pid was reused)", (int)pid);
		return -ESRCH;
	}
	t->start = pi.start;
	if (pi.shstk)
		t->no_ret = 1;
	*shstk = pi.shstk;
	return 0;
}

int bfi_patch_apply(struct bfi_target *t, const struct bfi_patch_opts *o,
		    const struct bft_nl_probe *p, size_t n, int *results,
		    struct bfi_patch_report *rep, char *err, size_t errlen)
{
	struct patching pc = { .t = t, .o = o, .rep = rep, .err = err,
			       .errlen = errlen };
	pid_t pid = (pid_t)t->tgid;
	uint64_t (*ranges)[2] = NULL;
	bool hook_refused = false, unwinder_later = false, shstk = false;
	struct libc_facts lf;
	size_t in = 0;
	int rc;

	memset(rep, 0, sizeof(*rep));
	for (size_t i = 0; i < n; i++)
		results[i] = -EOPNOTSUPP;
	rc = patch_vet(t, pid, &shstk, err, errlen);
	if (rc)
		return rc;
	rc = bft_entry_open(&pc.dec);
	if (!rc)
		rc = bfi_reloc_open(&pc.rel);
	if (!rc)
		bfi_reloc_shstk(pc.rel, shstk);
	/* + pthread_exit for the unwinder, exit() and abort() for the reader */
	pc.pl = calloc(n + 3, sizeof(*pc.pl));
	if (rc || !pc.pl) {
		patch_free(&pc);
		return rc ? rc : -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		rc = patch_plan_one(&pc, &p[i], &results[i], pid);
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0) {
			/* this probe's file or function: the others go on */
			patch_refuse(&pc, BFI_REFUSE_NRULES, p[i].name, err);
			results[i] = rc;
			err[0] = '\0';
		}
		if (rc == 2 && (p[i].flags & (BFT_PF_HOOK_UNWIND |
					      BFT_PF_HOOK_FORCED)))
			unwinder_later = true;
		else if (rc && (p[i].flags & BFT_PF_HOOKS))
			hook_refused = true;
	}
	rc = patch_scan(&pc, pid, unwinder_later, &lf);
	if (!rc)
		rc = patch_exit_drain(&pc, pid, &lf);
	if (!rc && unwinder_later)
		rc = patch_unwinder_later(&pc, pid, &lf, &hook_refused);
	if (rc)
		goto out;
	/*
	 * Where the C library keeps a thread's id (glibc's descriptor for
	 * libthread_db), so the recorder tells a new thread from a finished
	 * one that left it its thread block; not found: by %fs:0 alone.
	 */
	if (!t->tid_off)
		t->tid_off = lf.tid_off;
	ranges = calloc(pc.npl ? pc.npl : 1, sizeof(*ranges));
	if (!ranges) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < pc.npl; k++) {
		ranges[k][0] = pc.pl[k].plan.at;
		ranges[k][1] = pc.pl[k].plan.at + pc.pl[k].plan.len;
	}
	rc = bfi_world_stop_clear(pid, (const uint64_t (*)[2])ranges, pc.npl,
				  &pc.w, err, errlen);
	if (rc)
		goto out;
	if (!t->area) {
		rc = patch_area_map(&pc, pid);
		if (rc)
			goto out;
	}
	for (size_t k = 0; k < pc.npl; k++) {
		const struct bft_nl_probe *pr = pc.pl[k].probe;

		rc = patch_stub(&pc, &pc.pl[k], pr, pc.pl[k].result);
		if (rc < 0) {
			*pc.pl[k].result = rc;
			goto out;
		}
		if (rc > 0 && (pr->flags & BFT_PF_HOOKS))
			hook_refused = true;
		rc = 0;
	}
	if (hook_refused && !t->no_ret) {
		uint32_t one = 1;

		t->no_ret = 1;
		rc = bfi_mem_write(pc.w, t->area + offsetof(struct bfi_area,
							    no_ret),
				   &one, sizeof(one));
		if (rc)
			goto out;
	}
	/* what is about to change is on record before it changes */
	rc = o->save ? o->save(o->arg, t) : 0;
	if (!rc)
		rc = patch_jumps(&pc);
	if (!rc && o->save)
		rc = o->save(o->arg, t);
out:
	if (pc.w)
		bfi_world_release(pc.w);
	free(ranges);
	for (size_t i = 0; i < n; i++)
		if (!results[i])
			in++;
	rep->patched = in;
	rep->no_ret = t->no_ret;
	patch_free(&pc);
	if (rc)
		return rc;
	if (!in) {
		if (!err[0] && rep->first[0])
			snprintf(err, errlen, "%s", rep->first);
		return n ? results[0] : -EINVAL;
	}
	return 0;
}
