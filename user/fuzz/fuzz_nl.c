// SPDX-License-Identifier: GPL-2.0
/*
 * The netlink reply parsers of bft_nl, as a reply to each command would
 * reach them from the module.  Input: a selector byte (the command), then
 * the netlink messages.  Property: a failure comes with its reason.
 */
#include <errno.h>
#include <linux/bftrace.h>
#include <string.h>

#include "capture/bft_nl.h"
#include "fuzz.h"

#define FUZZ_FAMILY	0x1d	/* any id above the controller's */

static int on_exception(const struct bft_nl_exception *e, void *arg)
{
	(void)e;
	(void)arg;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t cmd = fuzz_take(&data, &size) % (BFT_CMD_MAX + 1);
	char err[512];
	int r;

	if (cmd == BFT_CMD_GET_EXCEPTIONS) {
		/* netlink messages are 4-byte aligned where a socket puts them */
		void *copy = malloc(size ? size : 1);

		if (!copy)
			return 0;
		memcpy(copy, data, size);
		r = bft_nl_parse_exceptions(copy, size, on_exception, NULL,
					    err, sizeof(err));
		free(copy);
		if (r < 0 && !err[0])
			fuzz_fail("nl: exceptions failed (%d) without a reason",
				  r);
		return 0;
	}
	if (cmd == BFT_CMD_DETACH)
		cmd = BFT_CMD_GET_STATUS;	/* an ack alone: no parser */
	r = bft_nl_parse_reply(cmd, FUZZ_FAMILY, data, size, err, sizeof(err));
	if (r > 0)
		fuzz_fail("nl: cmd %u returned %d", cmd, r);
	if (r && !err[0])
		fuzz_fail("nl: cmd %u failed (%d) without a reason", cmd, r);
	return 0;
}
