// SPDX-License-Identifier: GPL-2.0
/*
 * The counters protocol decoder (bfc_wire), as the agent reads an
 * inspector and as the inspector reads an agent.  Input: a selector byte
 * (bit 0: which direction), then messages one after another as a
 * connection carries them.  Properties: a decoded message encodes again
 * to exactly the bytes it was decoded from; "need more" only when the
 * input ends inside a message.
 */
#include <string.h>

#include "wire/bfc_wire.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum bfc_dir dir = fuzz_take(&data, &size) & 1 ? BFC_TO_INSPECTOR :
							 BFC_TO_AGENT;
	size_t off = 0;

	while (off < size) {
		struct bfc_msg m;
		struct bft_buf b = { 0 };
		char err[160];
		int r = bfc_decode(data + off, size - off, dir, &m, err,
				   sizeof(err));

		if (r < 0 && !err[0])
			fuzz_fail("counters: refused without a reason");
		if (r <= 0)
			break;
		if ((size_t)r > size - off)
			fuzz_fail("counters: took %d of %zu bytes", r,
				  size - off);
		/* the wire has one spelling per message */
		if (bfc_encode(&b, dir, &m) || b.len != (size_t)r ||
		    memcmp(b.data, data + off, b.len))
			fuzz_fail("counters: cmd %u does not encode to its "
				  "%d bytes", m.cmd, r);
		bft_buf_free(&b);
		bfc_msg_free(&m);
		off += (size_t)r;
	}
	return 0;
}
