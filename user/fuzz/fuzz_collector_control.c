// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's handling of HQ's control messages (commands.c): the
 * configuration (regexes compiled from it), start, stop, pause, suspend,
 * errors, in any order, against the replay source's simulation of the
 * module's modes.  Input: a selector byte (protocol version, started or
 * not, where to split the input between two reads), then the bytes.
 * Property: after each read no whole message is left unread while HQ is
 * still up.
 */
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_coll.h"
#include "fuzz_scratch.h"

/* A replay directory: one CPU's SYNC, one method. */
static void make_replay_dir(void)
{
	static const uint8_t sync[] = { 0x41, 0, 0, 0xc0, 0x84, 0x3d, 0xe8,
					0x07 };
	static const char methods[] = "1\t/bin/prog\tmain\n";

	fuzz_scratch("coll");
	fuzz_write_file("cpu0.bft", sync, sizeof(sync));
	fuzz_write_file("methods", methods, strlen(methods));
}

/* Nothing whole may wait in the input while HQ is up. */
static void check_drained(struct coll *c)
{
	struct bfp_msg m = { 0 };
	struct bfp_error err;

	if (c->hq == HQ_UP && c->ctl_in.len &&
	    bfp_decode(c->ctl_in.data, c->ctl_in.len, c->o.protocol,
		       BFP_CTX_AGENT_CONTROL, &m, &err) != 0)
		fuzz_fail("collector: a message was left unread");
	bfp_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);
	struct coll c = { .ctl_fd = -1 };
	size_t cut = size ? (size_t)(sel >> 2) * size / 64 : 0;
	char err[256];

	if (!fuzz_dir[0])
		make_replay_dir();
	c.o.replay_dir = fuzz_dir;
	c.o.protocol = sel & 1 ? 2 : 1;
	bfp_config_init(&c.config);
	if (exc_types_init(&c.exc) ||
	    source_open_replay(&c, err, sizeof(err)) ||
	    pipeline_init(&c, source_ncpus(c.src)))
		fuzz_fail("collector: setup: %s", err);
	c.hq = HQ_UP;
	c.configured = true;
	c.started = sel & 2;
	hq_control_feed(&c, data, cut);
	check_drained(&c);
	hq_control_feed(&c, data + cut, size - cut);
	check_drained(&c);
	pipeline_free(&c);
	source_close(c.src);
	methods_free(&c.methods);
	exc_types_free(&c.exc);
	bfp_config_free(&c.config);
	bft_buf_free(&c.ctl_in);
	bft_buf_free(&c.ctl_out);
	return 0;
}
