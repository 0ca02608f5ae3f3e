// SPDX-License-Identifier: GPL-2.0
/*
 * The .flow reader and ids.properties parser (bft_flow).  Input: a
 * selector byte (reader flags, which parser), then the file.  Property:
 * an image the strict reader accepts is what the writer writes for the
 * events read from it.
 */
#include <errno.h>
#include <string.h>

#include "wire/bft_flow.h"
#include "fuzz.h"

struct rewrite {
	struct bft_flow_writer w;
	struct bft_buf out;
};

static int on_event(void *ctx, const struct bft_flow_event *ev)
{
	struct rewrite *rw = ctx;

	return ev->kind == BFT_FLOW_ENTER ? bft_flow_enter(&rw->w, ev->value) :
					    bft_flow_exit(&rw->w, ev->value);
}

static int on_line(void *ctx, const char *key, size_t keylen, uint64_t id)
{
	(void)ctx;
	(void)id;
	if (!keylen || memchr(key, '\n', keylen))
		fuzz_fail("ids: a key that is empty or holds LF");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel = fuzz_take(&data, &size);
	struct bft_flow_error err;
	struct bft_ids_error ierr;
	struct rewrite rw = { 0 };
	int r;

	if (sel & 0x80) {
		r = bft_ids_parse((const char *)data, size, on_line, NULL,
				  &ierr);
		if (r && r != -EPROTO)
			fuzz_fail("ids: error %d", r);
		return 0;
	}
	bft_flow_writer_init_mem(&rw.w, &rw.out);
	r = bft_flow_read(data, size, sel & 3, on_event, &rw, &err);
	if (r && r != -EPROTO)
		fuzz_fail("flow: error %d", r);
	if (!r && bft_flow_writer_close(&rw.w))
		fuzz_fail("flow: the writer refuses what was read");
	if (!r && (sel & BFT_FLOW_STRICT) &&
	    (rw.out.len != size || (size && memcmp(rw.out.data, data, size))))
		fuzz_fail("flow: strict image (%zu bytes) is not what the "
			  "writer writes (%zu bytes)", size, rw.out.len);
	bft_buf_free(&rw.out);
	return 0;
}
