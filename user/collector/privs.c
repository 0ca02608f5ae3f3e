// SPDX-License-Identifier: GPL-2.0
/*
 * --user: bfcollector talks to an unauthenticated peer (HQ), so once
 * what needs root is open (the capture, the output directory) it becomes
 * that user, as tcpdump -Z does, keeping only the capabilities the
 * commands HQ may send still need:
 *
 *   module  CAP_PERFMON: the module checks it on every netlink command
 *           (start, stop, pause, the method table) and on the rings'
 *           status ioctl, of the caller as well as of the socket's opener
 *   replay  none: its files are open and the kernel is simulated
 *   BPF     refused: the session's guard process and its pinned objects
 *           (bpffs, root's) are made at HQ's start, after the switch
 *
 * libcap-ng does the switch (supplementary groups dropped, the bounding
 * set cleared, setgid/setuid with the kept capabilities carried over);
 * no_new_privs then keeps an exec from gaining any back.
 */
#include <cap-ng.h>
#include <errno.h>
#include <pwd.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "collector.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38	/* Linux 5.8; older headers lack it */
#endif

int coll_drop_privileges(struct coll *c, char *err, size_t errlen)
{
	struct passwd *pw;
	bool perfmon = false;
	int r;

	if (!c->o.user)
		return 0;
	errno = 0;
	pw = getpwnam(c->o.user);
	if (!pw) {
		snprintf(err, errlen, "--user %s: %s", c->o.user,
			 errno ? strerror(errno) : "no such user");
		return -EINVAL;
	}
	if (pw->pw_uid == 0)
		return 0;	/* asked to stay root */
	if (geteuid() != 0) {
		snprintf(err, errlen, "--user %s: bfcollector is not root, so "
			 "it cannot become another user", c->o.user);
		return -EPERM;
	}
	if (source_root_only(c->src)) {
		snprintf(err, errlen, "--user %s: %s; use it without --user",
			 c->o.user, source_root_only(c->src));
		return -EINVAL;
	}
	perfmon = source_is_kernel(c->src);
	/* a directory made for this run is the user's; another stays whose
	 * it is, and must let the user write to it */
	if (c->outdir_made && fchown(c->outdir_fd, pw->pw_uid, pw->pw_gid)) {
		snprintf(err, errlen, "--user %s: cannot hand %s over: %s",
			 c->o.user, c->o.outdir, strerror(errno));
		return -errno;
	}
	capng_clear(CAPNG_SELECT_BOTH);
	if (perfmon && capng_update(CAPNG_ADD, CAPNG_EFFECTIVE |
				    CAPNG_PERMITTED, CAP_PERFMON)) {
		snprintf(err, errlen, "--user: cannot keep CAP_PERFMON");
		return -EPERM;
	}
	r = capng_change_id((int)pw->pw_uid, (int)pw->pw_gid,
			    CAPNG_DROP_SUPP_GRP | CAPNG_CLEAR_BOUNDING);
	if (r) {
		snprintf(err, errlen, "--user %s: switching to uid %u gid %u "
			 "failed (libcap-ng: %d)", c->o.user,
			 (unsigned int)pw->pw_uid, (unsigned int)pw->pw_gid, r);
		return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		snprintf(err, errlen, "--user: no_new_privs: %s",
			 strerror(errno));
		return -errno;
	}
	if (c->outdir_fd >= 0 && faccessat(c->outdir_fd, ".", W_OK | X_OK,
					   0)) {
		snprintf(err, errlen, "--user %s: cannot write to %s",
			 c->o.user, c->o.outdir);
		return -EACCES;
	}
	coll_log("running as %s (uid %u), capabilities kept: %s", c->o.user,
		 (unsigned int)pw->pw_uid, perfmon ? "CAP_PERFMON" : "none");
	return 0;
}
