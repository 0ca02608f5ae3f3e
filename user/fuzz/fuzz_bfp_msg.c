// SPDX-License-Identifier: GPL-2.0
/*
 * Bytefrog messages, both directions, both protocol versions (bfp_msg).
 * Input: a selector byte (version, where the bytes are read), then
 * messages one after another as a connection carries them.  Properties:
 * a decoded message encodes again, and what that gives decodes to a
 * message that encodes to the same bytes.
 */
#include <string.h>

#include "wire/bfp_msg.h"
#include "fuzz.h"

static const enum bfp_ctx ctxs[] = {
	BFP_CTX_ANY, BFP_CTX_AGENT_CONTROL, BFP_CTX_AGENT_DATA,
	BFP_CTX_HQ_GREETING, BFP_CTX_HQ_CONTROL, BFP_CTX_HQ_DATA,
};

static void round_trip(const struct bfp_msg *m, unsigned int version)
{
	struct bft_buf a = { 0 }, b = { 0 };
	struct bfp_msg again = { 0 };
	struct bfp_error err;
	int r;

	if (bfp_encode(&a, version, m))
		goto out;	/* e.g. a configuration too large: refused */
	r = bfp_decode(a.data, a.len, version, BFP_CTX_ANY, &again, &err);
	if (r != (int)a.len)
		fuzz_fail("msg %u v%u: own encoding (%zu bytes) decodes to %d: "
			  "%s", m->id, version, a.len, r, err.msg);
	if (bfp_encode(&b, version, &again))
		fuzz_fail("msg %u v%u: decoded again, it does not encode",
			  m->id, version);
	if (a.len != b.len || memcmp(a.data, b.data, a.len))
		fuzz_fail("msg %u v%u: encodings differ", m->id, version);
out:
	bfp_msg_free(&again);
	bft_buf_free(&a);
	bft_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);
	unsigned int version = sel & 1 ? 2 : 1;
	enum bfp_ctx ctx = ctxs[(sel >> 1) % (sizeof(ctxs) / sizeof(ctxs[0]))];
	struct bfp_msg m = { 0 };
	struct bfp_error err;
	size_t pos = 0;

	while (pos < size) {
		int r = bfp_decode(data + pos, size - pos, version, ctx, &m,
				   &err);

		if (r <= 0)
			break;
		if ((size_t)r > size - pos)
			fuzz_fail("decode claims %d of %zu bytes", r,
				  size - pos);
		round_trip(&m, version);
		pos += (size_t)r;
	}
	bfp_msg_free(&m);
	return 0;
}
