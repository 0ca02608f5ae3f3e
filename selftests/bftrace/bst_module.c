// SPDX-License-Identifier: GPL-2.0
/*
 * bst_module: bftrace.ko itself (the header's "the module").  Loading and
 * unloading it, and seeing whether it and its generic netlink family are
 * there without a lookup that would autoload it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bft_selftest.h"
#include "bst_internal.h"

const char *bst_ko_path(void)
{
	const char *ko = getenv("BFT_KO");

	return ko && *ko ? ko : NULL;
}

bool bst_module_loaded(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/modules", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "bftrace ", 8);
	fclose(f);
	return found;
}

static int family_dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct { const char *name; bool *listed; } *q = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_NAME &&
		    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING) &&
		    !strcmp(mnl_attr_get_str(a), q->name))
			*q->listed = true;
	}
	return MNL_CB_OK;
}

int bst_family_listed(const char *name, bool *listed)
{
	char buf[32768];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct genlmsghdr *g;
	struct { const char *name; bool *listed; } q = { name, listed };
	unsigned int seq = (unsigned int)time(NULL), portid;
	ssize_t n;
	int ret = 0;

	*listed = false;
	nl = mnl_socket_open(NETLINK_GENERIC);
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = CTRL_CMD_GETFAMILY;
	g->version = 1;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		int r = mnl_cb_run(buf, (size_t)n, seq, portid, family_dump_cb, &q);

		if (r == MNL_CB_STOP)
			break;
		if (r < 0) {
			ret = -errno;
			break;
		}
	}
	if (n < 0)
		ret = -errno;
out:
	mnl_socket_close(nl);
	return ret;
}

int bst_insmod(const char *ko)
{
	int fd, err = 0;

	if (!ko)
		return -EINVAL;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		LOG("open %s: %s\n", ko, strerror(errno));
		return err;
	}
	if (syscall(SYS_finit_module, fd, "", 0)) {
		err = -errno;
		LOG("finit_module %s: %s\n", ko, strerror(errno));
	}
	close(fd);
	return err;
}

int bst_rmmod(void)
{
	if (syscall(SYS_delete_module, "bftrace", O_NONBLOCK)) {
		int err = -errno;

		LOG("delete_module bftrace: %s\n", strerror(errno));
		return err;
	}
	return 0;
}

int bst_ensure_loaded(void)
{
	if (bst_module_loaded())
		return 0;
	if (!bst_ko_path()) {
		LOG("bftrace is not loaded and BFT_KO is not set\n");
		return -ENOENT;
	}
	return bst_insmod(bst_ko_path());
}
