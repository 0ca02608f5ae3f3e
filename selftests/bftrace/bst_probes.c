// SPDX-License-Identifier: GPL-2.0
/*
 * bst_probes: function names to probes (the header's "probes").  Resolving
 * them with bft_elf, attaching them through the module, and the offsets the
 * rejection tests need.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/bft_elf.h"
#include "bft_selftest.h"
#include "bst_internal.h"

int bst_resolve(const struct bst_fn *fns, size_t n, struct bft_nl_probe *probes)
{
	for (size_t i = 0; i < n; i++) {
		struct bft_elf *e;
		struct bft_elf_func f;
		char msg[256] = "";
		int err = bft_elf_open(fns[i].file, &e, msg, sizeof(msg));

		if (err) {
			LOG("%s: %s\n", fns[i].file, msg);
			return err;
		}
		err = bft_elf_find_func(e, fns[i].func, &f);
		if (err) {
			LOG("%s: %s: %s\n", fns[i].file, fns[i].func,
			    bft_elf_errmsg(e));
			bft_elf_close(e);
			return err;
		}
		probes[i] = (struct bft_nl_probe){
			.path = fns[i].file,
			.offset = f.probe_offset,
			.method_id = fns[i].method_id,
			.flags = BFT_PF_ALL,
			.name = fns[i].func,
		};
		bft_elf_close(e);
	}
	return 0;
}

int bst_attach_fns(struct bst_session *s, pid_t tgid,
		   const struct bst_fn *fns, size_t n)
{
	struct bft_nl_probe *probes = calloc(n, sizeof(*probes));
	int *results = calloc(n, sizeof(*results));
	int err = -ENOMEM;

	if (!probes || !results)
		goto out;
	err = bst_resolve(fns, n, probes);
	if (err)
		goto out;
	err = bft_nl_attach(s->nl, (uint32_t)tgid, probes, n, results);
	if (err) {
		LOG("attach to %d: %s (%s)\n", tgid, strerror(-err),
		    bft_nl_errmsg(s->nl));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (results[i]) {
			LOG("attach %s:%s: %s\n", fns[i].file, fns[i].func,
			    strerror(-results[i]));
			err = results[i];
		}
	}
out:
	free(probes);
	free(results);
	return err;
}

int bst_nonexec_offset(const char *path, uint64_t *offset)
{
	int fd, ret = -ENOENT;
	Elf *elf;
	size_t nph;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_getphdrnum(elf, &nph)) {
		ret = -ENOEXEC;
		goto out;
	}
	for (size_t i = 0; i < nph && ret; i++) {
		GElf_Phdr ph, x;
		uint64_t cand;
		bool in_exec = false;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & PF_X) || ph.p_filesz < 2)
			continue;
		cand = ph.p_offset + ph.p_filesz / 2;
		for (size_t j = 0; j < nph; j++) {
			if (gelf_getphdr(elf, (int)j, &x) && x.p_type == PT_LOAD &&
			    (x.p_flags & PF_X) && cand >= x.p_offset &&
			    cand < x.p_offset + x.p_filesz)
				in_exec = true;
		}
		if (!in_exec) {
			*offset = cand;
			ret = 0;
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

int bst_spinner_traced(struct bst_session *s, struct bst_proc *p,
		       const char *const *argv, uint32_t method_id, bool start)
{
	char *path = bst_target_path("spinner");
	struct bst_fn fn = { path, SPIN_FN, method_id };
	int err;

	if (!path)
		return -ENOMEM;
	err = bst_proc_start(p, "spinner", argv, true, 10000);
	if (!err)
		err = bst_attach_fns(s, p->pid, &fn, 1);
	if (!err && start)
		err = bst_mode(s, BFT_CMD_START);
	free(path);
	return err;
}
