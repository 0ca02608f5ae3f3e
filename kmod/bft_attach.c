// SPDX-License-Identifier: GPL-2.0
/*
 * BFT_CMD_ATTACH: every probe of a batch is parsed and checked before any is
 * registered, so a bad batch leaves nothing behind.
 */
#include <linux/elf.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/namei.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/uprobes.h>

#include "bft_internal.h"

static const struct nla_policy bft_probe_policy[BFT_P_MAX + 1] = {
	[BFT_P_PATH] = { .type = NLA_NUL_STRING, .len = BFT_PATH_MAX - 1 },
	[BFT_P_OFFSET] = { .type = NLA_U64 },
	[BFT_P_METHOD_ID] = { .type = NLA_U32 },
	[BFT_P_FLAGS] = { .type = NLA_U32 },
	[BFT_P_NAME] = { .type = NLA_NUL_STRING, .len = BFT_NAME_MAX - 1 },
	[BFT_P_REF_CTR_OFFSET] = { .type = NLA_U64 },
	/* no length here: the checks below name the probe */
	[BFT_P_ARGS] = { .type = NLA_BINARY },
};

/* Program headers read once per file of the batch, not once per probe. */
#define BFT_MAX_PHDRS 64

struct bft_elf {
	struct dentry *dentry;
	int err;
	const char *why;
	u16 nr;
	struct elf64_phdr ph[BFT_MAX_PHDRS];
};

static void bft_elf_load(struct bft_elf *e, const struct path *path)
{
	struct elf64_hdr eh;
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	e->dentry = path->dentry;
	e->err = -ENOEXEC;
	e->nr = 0;
	/* dentry_open() checks no permission: tracing a file is reading it */
	e->err = path_permission(path, MAY_READ);
	if (e->err) {
		e->why = "is not readable by the caller";
		return;
	}
	e->err = -ENOEXEC;
	f = dentry_open(path, O_RDONLY | O_LARGEFILE, current_cred());
	if (IS_ERR(f)) {
		e->err = PTR_ERR(f);
		e->why = "cannot be opened";
		return;
	}
	n = kernel_read(f, &eh, sizeof(eh), &pos);
	if (n != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		e->why = "is not an ELF file";
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(struct elf64_phdr) ||
	    eh.e_phnum > BFT_MAX_PHDRS) {
		e->why = "is not a 64-bit ELF file with usable program headers";
		goto out;
	}
	pos = eh.e_phoff;
	n = kernel_read(f, e->ph, eh.e_phnum * sizeof(e->ph[0]), &pos);
	if (n != eh.e_phnum * sizeof(e->ph[0])) {
		e->why = "has truncated program headers";
		goto out;
	}
	e->nr = eh.e_phnum;
	e->err = 0;
out:
	fput(f);
}

static bool bft_elf_executable(const struct bft_elf *e, u64 off)
{
	u16 i;

	for (i = 0; i < e->nr; i++) {
		const struct elf64_phdr *ph = &e->ph[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) &&
		    off >= ph->p_offset && off < ph->p_offset + ph->p_filesz)
			return true;
	}
	return false;
}

static bool bft_same_function(const struct bft_probe *a,
			      const struct bft_probe *b)
{
	return a->inode == b->inode && a->offset == b->offset;
}

/* Was @f, a mapping's file, opened through @path? */
static bool bft_opened_as(const struct file *f, const struct path *path)
{
#ifdef BFT_HAVE_FILE_USER_PATH
	if (file_user_path(f)->dentry == path->dentry)
		return true;
#endif
	/* before 6.8 an overlayfs mapping kept the overlay's path */
	return f->f_path.dentry == path->dentry;
}

/*
 * The inode to probe for @path in @mm, ihold()ed.  On overlayfs a process
 * keeps running the layer its file was opened on, while the path moves to
 * the upper copy once anything copies the file up (a chmod is enough): the
 * probe goes where the process runs, or it would never be hit.  A file the
 * process does not map yet (a library loaded later) is probed as the path
 * resolves now.
 */
static struct inode *bft_mapped_inode(struct mm_struct *mm,
				      const struct path *path)
{
	struct inode *inode = d_real_inode(path->dentry);
	struct inode *mapped = NULL;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;

	if (mmget_not_zero(mm)) {
		mmap_read_lock(mm);
		vma_iter_init(&vmi, mm, 0);
		for_each_vma(vmi, vma) {
			struct file *f = vma->vm_file;

			if (!f)
				continue;
			if (file_inode(f) == inode) {
				mapped = NULL;
				break;
			}
			if (!mapped && bft_opened_as(f, path))
				mapped = file_inode(f);
		}
		if (mapped)
			inode = mapped;
		/* under the lock: the mapping pins @mapped until then */
		ihold(inode);
		mmap_read_unlock(mm);
		mmput(mm);
	} else {
		ihold(inode);
	}
	return inode;
}

/* Is @p's method id or (target, file, offset) taken, here or in @batch? */
static int bft_probe_clash(struct bft_probe *p, struct bft_target *t,
			   struct list_head *batch, struct netlink_ext_ack *ext,
			   u32 idx)
{
	struct bft_target *ot;
	struct bft_probe *q;

	list_for_each_entry(ot, &bft_targets, node) {
		list_for_each_entry(q, &ot->probes, node) {
			if (ot == t && bft_same_function(p, q))
				goto dup;
			if (q->method_id == p->method_id &&
			    !bft_same_function(p, q))
				goto id_taken;
		}
	}
	list_for_each_entry(q, batch, node) {
		if (bft_same_function(p, q))
			goto dup;
		if (q->method_id == p->method_id)
			goto id_taken;
	}
	return 0;
dup:
	BFT_SET_ERR_MSG_FMT(ext, "probe %u: already attached at offset %lld",
			    idx, p->offset);
	return -EEXIST;
id_taken:
	BFT_SET_ERR_MSG_FMT(ext, "probe %u: method id %u names another function",
			    idx, p->method_id);
	return -EEXIST;
}

static int bft_check_flags(u32 flags, u32 idx, const struct nlattr *attr,
			   struct netlink_ext_ack *ext)
{
	u32 known = BFT_PF_ALL | BFT_PF_HOOKS | BFT_PF_USDT;
	u32 hook = flags & BFT_PF_HOOKS;

	if (flags & ~known) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: unknown flags %#x", idx,
				    flags & ~known);
		goto bad;
	}
	/* a MARK has no frame for an ENTER, an EXIT or a hook to belong to */
	if (flags & BFT_PF_USDT) {
		if (flags == BFT_PF_USDT)
			return 0;
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: BFT_PF_USDT takes no other flag (flags %#x)",
				    idx, flags);
		goto bad;
	}
	if (hook & (hook - 1)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: more than one hook in flags %#x",
				    idx, flags);
		goto bad;
	}
	/* without the entry, an exit could not be attributed */
	if ((flags & BFT_PF_RETURN) && !(flags & BFT_PF_ENTRY)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: a return probe needs BFT_PF_ENTRY",
				    idx);
		goto bad;
	}
	if (!(flags & BFT_PF_ENTRY) && !hook) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: flags %#x record nothing",
				    idx, flags);
		goto bad;
	}
	return 0;
bad:
	NL_SET_BAD_ATTR(ext, attr);
	return -EINVAL;
}

/* BFT_P_ARGS and BFT_P_REF_CTR_OFFSET, which only a USDT probe has. */
static int bft_usdt_parse(struct bft_probe *p, struct nlattr **tb, u32 idx,
			  struct netlink_ext_ack *ext)
{
	const struct nlattr *args = tb[BFT_P_ARGS];
	const struct bft_usdt_arg *a;
	u32 len, i;

	/* the handler reads registers as slots of pt_regs */
	BUILD_BUG_ON(sizeof(struct pt_regs) !=
		     BFT_USDT_NREGS * sizeof(unsigned long));
	if (!(p->flags & BFT_PF_USDT)) {
		if (!args && !tb[BFT_P_REF_CTR_OFFSET])
			return 0;
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: arguments or a semaphore need BFT_PF_USDT",
				    idx);
		NL_SET_BAD_ATTR(ext, args ?: tb[BFT_P_REF_CTR_OFFSET]);
		return -EINVAL;
	}
	if (tb[BFT_P_REF_CTR_OFFSET])
		p->ref_ctr_offset = nla_get_u64(tb[BFT_P_REF_CTR_OFFSET]);
	if (!args)
		return 0;
	len = nla_len(args);
	if (len % sizeof(*a) ||
	    len / sizeof(*a) > BFT_USDT_MAX_ARGS) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: %u bytes of arguments: not 0 to %u entries",
				    idx, len, BFT_USDT_MAX_ARGS);
		NL_SET_BAD_ATTR(ext, args);
		return -EINVAL;
	}
	a = nla_data(args);
	for (i = 0; i < len / sizeof(*a); i++) {
		const char *why = bft_usdt_arg_bad(&a[i]);

		if (why) {
			BFT_SET_ERR_MSG_FMT(ext, "probe %u: argument %u has a bad %s",
					    idx, i, why);
			NL_SET_BAD_ATTR(ext, args);
			return -EINVAL;
		}
	}
	if (!len)
		return 0;
	p->args = kmemdup(a, len, GFP_KERNEL);
	if (!p->args)
		return -ENOMEM;
	p->nargs = len / sizeof(*a);
	return 0;
}

static int bft_probe_parse(struct nlattr *nest, u32 idx, struct bft_elf *elf,
			   struct mm_struct *mm, struct bft_probe **out,
			   struct netlink_ext_ack *ext)
{
	struct nlattr *tb[BFT_P_MAX + 1];
	struct bft_probe *p;
	const char *path;
	loff_t size;
	int err;

	err = nla_parse_nested(tb, BFT_P_MAX, nest, bft_probe_policy, ext);
	if (err)
		return err;
	if (!tb[BFT_P_PATH] || !tb[BFT_P_OFFSET] || !tb[BFT_P_METHOD_ID] ||
	    !tb[BFT_P_FLAGS] || !tb[BFT_P_NAME]) {
		NL_SET_ERR_MSG_ATTR(ext, nest,
				    "a probe needs path, offset, method id, flags and name");
		return -EINVAL;
	}
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	INIT_LIST_HEAD(&p->node);
	p->offset = nla_get_u64(tb[BFT_P_OFFSET]);
	p->method_id = nla_get_u32(tb[BFT_P_METHOD_ID]);
	p->flags = nla_get_u32(tb[BFT_P_FLAGS]);
	p->name = kstrdup(nla_data(tb[BFT_P_NAME]), GFP_KERNEL);
	p->hits = alloc_percpu(u64);
	if (!p->name || !p->hits) {
		err = -ENOMEM;
		goto free_name;
	}
	path = nla_data(tb[BFT_P_PATH]);

	err = bft_check_flags(p->flags, idx, tb[BFT_P_FLAGS], ext);
	if (!err)
		err = bft_usdt_parse(p, tb, idx, ext);
	if (err)
		goto free_name;
	err = kern_path(path, LOOKUP_FOLLOW, &p->path);
	if (err) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: %s path does not resolve",
				    idx, err == -ENOENT ? "no such file:" : "");
		goto free_name;
	}
	if (d_is_dir(p->path.dentry)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: path is a directory", idx);
		err = -EISDIR;
		goto put;
	}
	if (!d_is_reg(p->path.dentry)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: path is not a regular file",
				    idx);
		err = -EINVAL;
		goto put;
	}
	if (elf->dentry != p->path.dentry)
		bft_elf_load(elf, &p->path);
	if (elf->err) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: file %s", idx, elf->why);
		err = elf->err;
		goto put;
	}
	p->inode = bft_mapped_inode(mm, &p->path);
	size = i_size_read(p->inode);
	if (p->offset < 0 || p->offset >= size) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: offset %lld is past the end (%lld)",
				    idx, p->offset, size);
		err = -ERANGE;
		goto put;
	}
	/* the counter is two bytes long */
	if (p->ref_ctr_offset &&
	    (p->ref_ctr_offset < 0 || p->ref_ctr_offset > size - 2)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: semaphore offset %lld is past the end (%lld)",
				    idx, p->ref_ctr_offset, size);
		NL_SET_BAD_ATTR(ext, tb[BFT_P_REF_CTR_OFFSET]);
		err = -ERANGE;
		goto put;
	}
	/* x86's breakpoint is one byte long: every offset is aligned there */
	if (!IS_ALIGNED(p->offset, UPROBE_SWBP_INSN_SIZE)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: offset %lld is not aligned to %u bytes",
				    idx, p->offset, UPROBE_SWBP_INSN_SIZE);
		err = -EINVAL;
		goto put;
	}
	if (!bft_elf_executable(elf, p->offset)) {
		BFT_SET_ERR_MSG_FMT(ext, "probe %u: offset %lld is in no executable segment",
				    idx, p->offset);
		err = -EINVAL;
		goto put;
	}
	*out = p;
	return 0;
put:
	iput(p->inode);
	path_put(&p->path);
free_name:
	free_percpu(p->hits);
	kfree(p->args);
	kfree(p->name);
	kfree(p);
	return err;
}

static void bft_batch_free(struct list_head *batch)
{
	struct bft_probe *p, *pn;

	list_for_each_entry_safe(p, pn, batch, node) {
		list_del(&p->node);
		bft_probe_free(p);
	}
}

static int bft_put_result(struct sk_buff *skb, u32 idx, int err)
{
	struct nlattr *res = nla_nest_start(skb, BFT_A_RESULT);

	if (!res || nla_put_u32(skb, BFT_R_INDEX, idx) ||
	    nla_put_s32(skb, BFT_R_ERRNO, -err))
		return -EMSGSIZE;
	nla_nest_end(skb, res);
	return 0;
}

static int bft_batch_register(struct bft_target *t, struct list_head *batch,
			      struct sk_buff *reply,
			      struct netlink_ext_ack *ext)
{
	struct bft_probe *p, *pn;
	struct nlattr *results;
	int first_err = 0, ok = 0, err;
	u32 idx = 0;

	results = nla_nest_start(reply, BFT_A_RESULTS);
	if (!results)
		return -EMSGSIZE;
	list_for_each_entry_safe(p, pn, batch, node) {
		p->target = t;
		err = bft_probe_register(p);
		/* the kernel-internal ENOTSUPP (e.g. an instruction uprobes
		 * cannot handle) means nothing to user space
		 */
		if (err == -ENOTSUPP)
			err = -EOPNOTSUPP;
		if (bft_put_result(reply, idx++, err))
			err = err ?: -EMSGSIZE;
		list_del_init(&p->node);
		if (err) {
			if (!first_err)
				first_err = err;
			bft_notify_probe_failed(t->tgid, p->method_id, err);
			bft_probe_free(p);
			continue;
		}
		list_add_tail(&p->node, &t->probes);
		if (p->flags & BFT_PF_RETURN)
			t->had_ret = true;
		t->nr_probes++;
		bft_nr_probes++;
		ok++;
	}
	nla_nest_end(reply, results);
	if (!ok && first_err) {
		NL_SET_ERR_MSG_MOD(ext, "the kernel registered none of the probes");
		return first_err;
	}
	return 0;
}

int bft_attach(struct genl_info *info)
{
	struct netlink_ext_ack *ext = info->extack;
	struct sk_buff *reply = NULL;
	void *hdr;
	struct bft_elf *elf = NULL;
	struct bft_target *t;
	struct bft_probe *p;
	struct nlattr *nest;
	LIST_HEAD(batch);
	u32 n = 0, idx = 0;
	bool fresh = false;
	pid_t tgid;
	int rem, err;

	if (GENL_REQ_ATTR_CHECK(info, BFT_A_TGID) ||
	    GENL_REQ_ATTR_CHECK(info, BFT_A_PROBES))
		return -EINVAL;
	nla_for_each_nested(nest, info->attrs[BFT_A_PROBES], rem)
		n++;
	if (!n) {
		NL_SET_ERR_MSG_ATTR(ext, info->attrs[BFT_A_PROBES], "no probes");
		return -EINVAL;
	}
	if (bft_nr_probes + n > bft_opts.max_probes) {
		BFT_SET_ERR_MSG_FMT(ext, "%u probes exceed the limit (option max_probes %u)",
				    n, bft_opts.max_probes);
		return -E2BIG;
	}
	err = bft_session_prepare(ext);
	if (err)
		return err;
	tgid = nla_get_u32(info->attrs[BFT_A_TGID]);
	t = bft_target_find(tgid);
	/* exec'd (or died, its pid reused) since the reaper last ran */
	if (t && bft_target_stale(t)) {
		bft_target_reap(t);
		t = NULL;
	}
	if (!t) {
		t = bft_target_new(tgid, ext);
		if (IS_ERR(t))
			return PTR_ERR(t);
		fresh = true;
	}
	/* every attach, by whoever asks: ptrace policy may differ per caller */
	err = bft_may_trace(tgid, t->mm, ext);
	if (err) {
		if (fresh)
			bft_target_free_if_empty(t);
		return err;
	}
	elf = kzalloc(sizeof(*elf), GFP_KERNEL);
	reply = bft_reply_new(info, nla_total_size(sizeof(u32)) +
			      nla_total_size(0) +
			      n * (nla_total_size(0) +
				   2 * nla_total_size(sizeof(u32))), &hdr);
	if (!elf || !reply) {
		err = -ENOMEM;
		goto out;
	}
	nla_for_each_nested(nest, info->attrs[BFT_A_PROBES], rem) {
		if (nla_type(nest) != BFT_A_PROBE) {
			NL_SET_ERR_MSG_ATTR(ext, nest, "expected a BFT_A_PROBE nest");
			err = -EINVAL;
			goto out;
		}
		err = bft_probe_parse(nest, idx, elf, t->mm, &p, ext);
		if (!err) {
			err = bft_probe_clash(p, t, &batch, ext, idx);
			if (err)
				bft_probe_free(p);
		}
		if (err)
			goto out;
		list_add_tail(&p->node, &batch);
		idx++;
	}
	if (nla_put_u32(reply, BFT_A_TGID, tgid)) {
		err = -EMSGSIZE;
		goto out;
	}
	err = bft_batch_register(t, &batch, reply, ext);
	if (!err) {
		err = bft_reply_send(reply, hdr, info);
		reply = NULL;
	}
out:
	nlmsg_free(reply);
	kfree(elf);
	bft_batch_free(&batch);
	/* a target a detach by id emptied stays one (uapi BFT_CMD_DETACH) */
	if (fresh)
		bft_target_free_if_empty(t);
	return err;
}
