// SPDX-License-Identifier: GPL-2.0
/*
 * The agent configuration: Java serialisation (version 1, through the
 * bfp_joss reader) and JSON (version 2, through jansson).  Input: a
 * selector byte (which one), then the configuration.  Property: what
 * decodes encodes, and decodes again to the same configuration.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "wire/bfp_config.h"
#include "fuzz.h"

static bool lists_equal(const struct bfp_strlist *a,
			const struct bfp_strlist *b)
{
	uint32_t i;

	if (a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]))
			return false;
	return true;
}

static bool configs_equal(const struct bfp_config *a,
			  const struct bfp_config *b)
{
	return a->run_id == b->run_id && a->heartbeat_ms == b->heartbeat_ms &&
	       a->buffer_budget == b->buffer_budget &&
	       a->queue_retry == b->queue_retry &&
	       a->data_senders == b->data_senders &&
	       lists_equal(&a->exclusions, &b->exclusions) &&
	       lists_equal(&a->inclusions, &b->inclusions);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool json = fuzz_take(&data, &size) & 1;
	struct bfp_config c, again;
	struct bft_buf b = { 0 };
	char err[256];
	int r;

	if (json)
		r = bfp_config_decode_json((const char *)data, size, &c, err,
					   sizeof(err));
	else
		r = bfp_config_decode_java(data, size, &c, err, sizeof(err));
	if (r) {
		if (r != -EPROTO && r != -ENOMEM)
			fuzz_fail("config: error %d", r);
		if (!err[0])
			fuzz_fail("config: an error without a reason");
		return 0;
	}
	r = json ? bfp_config_encode_json(&c, &b) :
		   bfp_config_encode_java(&c, &b);
	/* JSON: a list string that is not valid UTF-8 cannot be written */
	if (r && !(json && r == -EINVAL))
		fuzz_fail("config: decoded, but encoding fails: %d", r);
	if (!r) {
		r = json ? bfp_config_decode_json((const char *)b.data, b.len,
						  &again, err, sizeof(err)) :
			   bfp_config_decode_java(b.data, b.len, &again, err,
						  sizeof(err));
		if (r)
			fuzz_fail("config: own encoding does not decode: %s",
				  err);
		if (!configs_equal(&c, &again))
			fuzz_fail("config: a round trip changes it");
		bfp_config_free(&again);
	}
	bfp_config_free(&c);
	bft_buf_free(&b);
	return 0;
}
