/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels bftrace builds on, in one place.
 *
 * BFT_UPROBE_GEN comes from Kbuild, which reads it off include/linux/uprobes.h
 * rather than trusting the version number: distributions backport.
 * Generation 3 (6.13+) is written but not built or tested here.
 */
#ifndef BFT_COMPAT_H
#define BFT_COMPAT_H

#include <linux/uprobes.h>
#include <linux/netlink.h>

#ifndef BFT_UPROBE_GEN
#error "BFT_UPROBE_GEN is set by Kbuild from include/linux/uprobes.h"
#endif

#if BFT_UPROBE_GEN >= 3
#define BFT_HANDLER_ARGS struct uprobe_consumer *uc, struct pt_regs *regs, \
			 __u64 *data
#define BFT_RET_HANDLER_ARGS struct uprobe_consumer *uc, unsigned long func, \
			     struct pt_regs *regs, __u64 *data
#else
#define BFT_HANDLER_ARGS struct uprobe_consumer *uc, struct pt_regs *regs
#define BFT_RET_HANDLER_ARGS struct uprobe_consumer *uc, unsigned long func, \
			     struct pt_regs *regs
#endif

#if BFT_UPROBE_GEN >= 2
#define BFT_FILTER_ARGS struct uprobe_consumer *uc, struct mm_struct *mm
#else
#define BFT_FILTER_ARGS struct uprobe_consumer *uc, \
			enum uprobe_filter_ctx ctx, struct mm_struct *mm
#endif

/*
 * Formatted extack messages need storage that outlives the doit callback.
 * 6.2+ gives every extack its own buffer; before that, a small pool of
 * static buffers is recycled, so a message is only overwritten after many
 * later rejections.
 */
#ifdef NETLINK_MAX_FMTMSG_LEN
#define BFT_SET_ERR_MSG_FMT(extack, fmt, ...) \
	NL_SET_ERR_MSG_FMT(extack, fmt, ##__VA_ARGS__)
#else
char *bft_errbuf(void);
#define BFT_ERRBUF_LEN 80
#define BFT_SET_ERR_MSG_FMT(extack, fmt, ...) do {			\
	struct netlink_ext_ack *__ext = (extack);			\
	char *__buf = bft_errbuf();					\
	snprintf(__buf, BFT_ERRBUF_LEN, fmt, ##__VA_ARGS__);		\
	if (__ext)							\
		__ext->_msg = __buf;					\
} while (0)
#endif

#endif /* BFT_COMPAT_H */
