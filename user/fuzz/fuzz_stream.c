// SPDX-License-Identifier: GPL-2.0
/*
 * The ring record stream decoder (bft_stream).  Property: the records,
 * errors and statistics do not depend on how the bytes are split between
 * feeds.  Input: a selector byte (chunk size, error policy), the stream.
 */
#include <string.h>

#include "wire/bft_stream.h"
#include "fuzz.h"

struct digest {
	uint64_t hash, records, errors;
};

static void mix(struct digest *d, uint64_t v)
{
	d->hash = (d->hash ^ v) * 0x100000001b3ull;
}

static int on_record(void *ctx, const struct bft_record *r)
{
	struct digest *d = ctx;

	d->records++;
	mix(d, r->kind);
	mix(d, r->value);
	mix(d, r->value2);
	mix(d, r->time_ns);
	mix(d, r->offset);
	mix(d, r->tid);
	mix(d, r->seq);
	mix(d, (uint64_t)r->mark_signed << 16 | r->mark_unread);
	return 0;
}

/* The error policy of this input. */
static int policy;

static int on_error(void *ctx, const struct bft_stream_error *e)
{
	struct digest *d = ctx;

	d->errors++;
	mix(d, 1000 + e->code);
	mix(d, e->offset);
	return policy;
}

static void decode(const uint8_t *p, size_t n, size_t chunk,
		   struct digest *d, struct bft_stream_stats *st)
{
	struct bft_stream s;
	struct bft_stream_opts o = {
		.cpu = 1,
		.on_record = on_record,
		.on_error = on_error,
		.ctx = d,
	};
	size_t i;

	memset(d, 0, sizeof(*d));
	bft_stream_init(&s, &o);
	for (i = 0; i < n; i += chunk)
		if (bft_stream_feed(&s, p + i, n - i < chunk ? n - i : chunk))
			break;
	bft_stream_finish(&s);
	*st = *bft_stream_stats(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);
	size_t chunk = (sel & 15) + 1;
	struct digest whole, split;
	struct bft_stream_stats sw, ss;

	policy = sel & 0x80 ? BFT_STREAM_RESYNC : BFT_STREAM_STOP;
	decode(data, size, size ? size : 1, &whole, &sw);
	decode(data, size, chunk, &split, &ss);
	if (whole.hash != split.hash || whole.records != split.records ||
	    whole.errors != split.errors)
		fuzz_fail("stream: whole: %llu records %llu errors, "
			  "in chunks of %zu: %llu records %llu errors",
			  (unsigned long long)whole.records,
			  (unsigned long long)whole.errors, chunk,
			  (unsigned long long)split.records,
			  (unsigned long long)split.errors);
	if (sw.events != ss.events || sw.records != ss.records ||
	    sw.skipped_bytes != ss.skipped_bytes)
		fuzz_fail("stream: statistics depend on the split (%zu)",
			  chunk);
	return 0;
}
