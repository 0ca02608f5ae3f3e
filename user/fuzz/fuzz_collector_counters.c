// SPDX-License-Identifier: GPL-2.0
/*
 * bfcollector's counters agent (counters_wire.c) reading an inspector: List,
 * Add, Remove, Good Bye and anything else, against the replay source's
 * methods and CPUs.  Input: a selector byte (where to split the input
 * between two reads), then the bytes.  Properties: everything the agent
 * answers is a well-formed message of the counters protocol, whole; what
 * it says it sampled is what Hello and Add described.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wire/bfc_wire.h"
#include "fuzz.h"
#include "fuzz_coll.h"
#include "fuzz_scratch.h"

/* A replay directory: two CPUs, two methods. */
static void make_replay_dir(void)
{
	static const uint8_t sync[] = { 0x41, 0, 0, 0xc0, 0x84, 0x3d, 0xe8,
					0x07 };
	static const char methods[] = "1\t/bin/prog\tmain\n"
				      "2\t/bin/prog\twork\n";

	fuzz_scratch("ctr");
	fuzz_write_file("cpu0.bft", sync, sizeof(sync));
	fuzz_write_file("cpu1.bft", sync, sizeof(sync));
	fuzz_write_file("methods", methods, strlen(methods));
}

/* What the agent wrote so far, and how much of it was checked. */
static struct bft_buf acc;
static size_t checked;

/* Let the agent write until the socket has nothing more. */
static void pump(struct coll *c, int fd)
{
	uint8_t buf[65536];
	bool more = true;

	while (more) {
		ssize_t r;

		more = false;
		counters_io(c, NULL, 0);
		while ((r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
			if (bft_buf_append(&acc, buf, (size_t)r))
				fuzz_fail("counters: out of memory");
			more = true;
		}
	}
}

/* Everything the agent wrote must decode, in order. */
static void check_answers(bool *described, bool *hello)
{
	while (checked < acc.len) {
		struct bfc_msg m;
		char err[200];
		int n = bfc_decode(acc.data + checked, acc.len - checked,
				   BFC_TO_INSPECTOR, &m, err, sizeof(err));

		if (n < 0)
			fuzz_fail("counters: the agent wrote %s at %zu of %zu",
				  err, checked, acc.len);
		if (!n)
			return;		/* the rest is on its way */
		if ((m.cmd == BFC_HELLO) == *hello)
			fuzz_fail("counters: Hello %s", *hello ? "again" :
				  "missing");
		*hello = true;
		for (uint32_t i = 0; i < m.nheaders; i++)
			described[(uint16_t)m.headers[i].index] = true;
		for (uint32_t i = 0; i < m.nvalues; i++)
			if (!described[(uint16_t)m.values[i].index])
				fuzz_fail("counters: a value of index %d, "
					  "never described",
					  m.values[i].index);
		bfc_msg_free(&m);
		checked += (size_t)n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool described[1 << 16];
	uint8_t sel = fuzz_take(&data, &size);
	struct coll c = { .ctl_fd = -1 };
	size_t cut = size ? (size_t)(sel >> 2) * size / 64 : 0;
	bool hello = false;
	char err[256];
	int sv[2];

	if (!fuzz_dir[0])
		make_replay_dir();
	memset(described, 0, sizeof(described));
	c.o.replay_dir = fuzz_dir;
	c.o.counters_host = "127.0.0.1";
	c.o.counters_port = "1";
	/* no sample falls due: Samples come from the final one only */
	c.o.counters_ms = 3600000;
	c.hq = HQ_NONE;
	bfp_config_init(&c.config);
	if (exc_types_init(&c.exc) ||
	    source_open_replay(&c, err, sizeof(err)) ||
	    pipeline_init(&c, source_ncpus(c.src)) || counters_init(&c))
		fuzz_fail("counters: setup: %s", err);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		fuzz_fail("counters: socketpair: %s", strerror(errno));
	if (counters_adopt(&c, sv[0]))
		fuzz_fail("counters: cannot adopt a socket");
	acc.len = 0;
	checked = 0;
	counters_feed(&c, data, cut);
	pump(&c, sv[1]);
	check_answers(described, &hello);
	counters_feed(&c, data + cut, size - cut);
	counters_shutdown(&c);
	pump(&c, sv[1]);
	check_answers(described, &hello);
	/* half a message only where the agent hung up mid-write */
	if (checked != acc.len && counters_connected(&c))
		fuzz_fail("counters: half a message while connected");
	close(sv[1]);
	counters_free(&c);
	pipeline_free(&c);
	source_close(c.src);
	methods_free(&c.methods);
	exc_types_free(&c.exc);
	bfp_config_free(&c.config);
	return 0;
}
