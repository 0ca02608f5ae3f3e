// SPDX-License-Identifier: GPL-2.0
/*
 * Each message has its encoder and its decoder next to each other, so that
 * a layout is read and written in one place.  Decoders read through a
 * bounds-checked struct bfp_rd: running short anywhere means "incomplete",
 * which bfp_decode() turns into 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/bfp_msg.h"
#include "wire/bfp_wire.h"

struct dec {
	struct bfp_rd r;
	struct bfp_msg *m;
	unsigned int version;
	struct bfp_error *err;
};

static int fail(struct dec *d, int code, const char *fmt, ...)
{
	va_list ap;

	d->err->code = code;
	va_start(ap, fmt);
	vsnprintf(d->err->msg, sizeof(d->err->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* A string into the message's store: str (which 0) or str2 (which 1). */
static int get_str(struct dec *d, int which)
{
	struct bfp_msg *m = d->m;
	char *at = (char *)m->store.data + m->store.len;
	size_t len;
	int err = bfp_get_utf(&d->r, at, &len);

	if (err == -EAGAIN)
		return 0;
	if (err)
		return fail(d, err, "%s: malformed modified UTF-8 string",
			    bfp_id_name(m->id));
	m->store.len += len + 1;
	if (which) {
		m->str2 = at;
		m->str2_len = len;
	} else {
		m->str = at;
		m->str_len = len;
	}
	return 0;
}

static int put_str(struct bft_buf *b, const char *s, size_t n)
{
	return bfp_put_utf(b, s ? s : "", s ? n : 0, true);
}

/* ---- messages without a body: start, stop, ..., data hello reply ---- */

static int enc_empty(struct bft_buf *b, unsigned int v, const struct bfp_msg *m)
{
	(void)b, (void)v, (void)m;
	return 0;
}

static int dec_empty(struct dec *d)
{
	(void)d;
	return 0;
}

/* ---- hello: u8 protocol version ---- */

static int enc_hello(struct bft_buf *b, unsigned int v, const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u8(b, m->version);
}

static int dec_hello(struct dec *d)
{
	bfp_get_u8(&d->r, &d->m->version);
	return 0;
}

/* ---- data hello: u8 run id ---- */

static int enc_data_hello(struct bft_buf *b, unsigned int v,
			  const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u8(b, m->run_id);
}

static int dec_data_hello(struct dec *d)
{
	bfp_get_u8(&d->r, &d->m->run_id);
	return 0;
}

/* ---- configuration: v1 i32 length + Java stream; v2 UTF JSON ---- */

static int enc_config(struct bft_buf *b, unsigned int v,
		      const struct bfp_msg *m)
{
	struct bft_buf tmp = { 0 };
	int err;

	if (!m->config)
		return -EINVAL;
	if (v == 1) {
		err = bfp_config_encode_java(m->config, &tmp);
		if (!err)
			err = bfp_put_u32(b, (uint32_t)tmp.len);
		if (!err)
			err = bft_buf_append(b, tmp.data, tmp.len);
	} else {
		err = bfp_config_encode_json(m->config, &tmp);
		if (!err)
			err = bfp_put_utf(b, (const char *)tmp.data, tmp.len,
					  false);
	}
	bft_buf_free(&tmp);
	return err;
}

static int dec_config(struct dec *d)
{
	struct bfp_msg *m = d->m;
	char why[128];
	int err;

	if (d->version == 1) {
		const uint8_t *p;
		uint32_t len;

		if (!bfp_get_u32(&d->r, &len))
			return 0;
		if (len == 0 || len > BFP_CONFIG_V1_MAX)
			return fail(d, -EPROTO,
				    "configuration: bad length %d", (int32_t)len);
		if (!bfp_get_bytes(&d->r, len, &p))
			return 0;
		err = bfp_config_decode_java(p, len, &m->own_config, why,
					     sizeof(why));
	} else {
		err = get_str(d, 0);
		if (err || d->r.short_read)
			return err;
		err = bfp_config_decode_json(m->str, m->str_len,
					     &m->own_config, why, sizeof(why));
	}
	if (err == -ENOMEM)
		return fail(d, err, "configuration: out of memory");
	if (err)
		return fail(d, -EPROTO, "configuration: %s", why);
	m->config = &m->own_config;
	return 0;
}

/* ---- heartbeat: u8 mode, u16 send queue size ---- */

static int enc_heartbeat(struct bft_buf *b, unsigned int v,
			 const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u8(b, m->mode) ?: bfp_put_u16(b, m->queue);
}

static int dec_heartbeat(struct dec *d)
{
	if (bfp_get_u8(&d->r, &d->m->mode) && !bfp_mode_valid(d->m->mode))
		return fail(d, -EPROTO, "heartbeat: unknown mode 0x%02x",
			    d->m->mode);
	bfp_get_u16(&d->r, &d->m->queue);
	return 0;
}

/* ---- data break: i32 sequence of the first message after the break ---- */

static int enc_data_break(struct bft_buf *b, unsigned int v,
			  const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->seq);
}

static int dec_data_break(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->seq);
	return 0;
}

/*
 * ---- data end (bftrace's, UDP only): u8 stream, u32 datagrams sent on it,
 * u32 the sequence number after the last one sent ----
 */

static int enc_data_end(struct bft_buf *b, unsigned int v,
			const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u8(b, m->stream) ?: bfp_put_u32(b, m->packets) ?:
	       bfp_put_u32(b, m->seq);
}

static int dec_data_end(struct dec *d)
{
	bfp_get_u8(&d->r, &d->m->stream);
	bfp_get_u32(&d->r, &d->m->packets);
	bfp_get_u32(&d->r, &d->m->seq);
	return 0;
}

/* ---- map thread name: u16 thread, i32 time, UTF name ---- */

static int enc_map_thread(struct bft_buf *b, unsigned int v,
			  const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u16(b, m->thread) ?: bfp_put_u32(b, m->time) ?:
	       put_str(b, m->str, m->str_len);
}

static int dec_map_thread(struct dec *d)
{
	bfp_get_u16(&d->r, &d->m->thread);
	bfp_get_u32(&d->r, &d->m->time);
	return get_str(d, 0);
}

/* ---- map method signature: i32 id, UTF signature ---- */

static int enc_map_method(struct bft_buf *b, unsigned int v,
			  const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->method) ?: put_str(b, m->str, m->str_len);
}

static int dec_map_method(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->method);
	return get_str(d, 0);
}

/* ---- map exception: i32 id, UTF exception type ---- */

static int enc_map_exception(struct bft_buf *b, unsigned int v,
			     const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->exception) ?: put_str(b, m->str, m->str_len);
}

static int dec_map_exception(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->exception);
	return get_str(d, 0);
}

/*
 * ---- method entry: i32 time, i32 seq, i32 method, u16 thread;
 * method exit: i32 time, i32 seq, i32 method, then v1 u16 line or v2 bool
 * exception thrown, then u16 thread ----
 *
 * Both are written by bfp_put_call (bfp_msg.h), whole: the id byte that
 * bfp_encode put first is written again.
 */

static int enc_call(struct bft_buf *b, unsigned int v, const struct bfp_msg *m)
{
	int err;

	b->len--;
	err = bft_buf_reserve(b, BFP_CALL_MAX);
	if (err)
		return err;
	b->len += bfp_put_call(b->data + b->len, v, m->id, m->time, m->seq,
			       m->method, m->thread, m->line,
			       m->exception_thrown);
	return 0;
}

static int dec_entry(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->time);
	bfp_get_u32(&d->r, &d->m->seq);
	bfp_get_u32(&d->r, &d->m->method);
	bfp_get_u16(&d->r, &d->m->thread);
	return 0;
}

static int dec_exit(struct dec *d)
{
	uint8_t thrown = 0;

	bfp_get_u32(&d->r, &d->m->time);
	bfp_get_u32(&d->r, &d->m->seq);
	bfp_get_u32(&d->r, &d->m->method);
	if (d->version == 1)
		bfp_get_u16(&d->r, &d->m->line);
	else
		bfp_get_u8(&d->r, &thrown);	/* readBoolean: nonzero */
	d->m->exception_thrown = thrown != 0;
	bfp_get_u16(&d->r, &d->m->thread);
	return 0;
}

/*
 * ---- exception: i32 time, i32 seq, i32 method, i32 exception, u16 line,
 * u16 thread ----
 */

static int enc_exception(struct bft_buf *b, unsigned int v,
			 const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->time) ?: bfp_put_u32(b, m->seq) ?:
	       bfp_put_u32(b, m->method) ?: bfp_put_u32(b, m->exception) ?:
	       bfp_put_u16(b, m->line) ?: bfp_put_u16(b, m->thread);
}

static int dec_exception(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->time);
	bfp_get_u32(&d->r, &d->m->seq);
	bfp_get_u32(&d->r, &d->m->method);
	bfp_get_u32(&d->r, &d->m->exception);
	bfp_get_u16(&d->r, &d->m->line);
	bfp_get_u16(&d->r, &d->m->thread);
	return 0;
}

/*
 * ---- exception bubble: i32 time, i32 seq, i32 method, i32 exception,
 * u16 thread ----
 */

static int enc_bubble(struct bft_buf *b, unsigned int v,
		      const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->time) ?: bfp_put_u32(b, m->seq) ?:
	       bfp_put_u32(b, m->method) ?: bfp_put_u32(b, m->exception) ?:
	       bfp_put_u16(b, m->thread);
}

static int dec_bubble(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->time);
	bfp_get_u32(&d->r, &d->m->seq);
	bfp_get_u32(&d->r, &d->m->method);
	bfp_get_u32(&d->r, &d->m->exception);
	bfp_get_u16(&d->r, &d->m->thread);
	return 0;
}

/* ---- class transformed / ignored / failed, error: UTF ---- */

static int enc_text(struct bft_buf *b, unsigned int v, const struct bfp_msg *m)
{
	(void)v;
	return put_str(b, m->str, m->str_len);
}

static int dec_text(struct dec *d)
{
	return get_str(d, 0);
}

/* ---- marker: i32 time, i32 seq, UTF key, UTF value ---- */

static int enc_marker(struct bft_buf *b, unsigned int v,
		      const struct bfp_msg *m)
{
	(void)v;
	return bfp_put_u32(b, m->time) ?: bfp_put_u32(b, m->seq) ?:
	       put_str(b, m->str, m->str_len) ?:
	       put_str(b, m->str2, m->str2_len);
}

static int dec_marker(struct dec *d)
{
	bfp_get_u32(&d->r, &d->m->time);
	bfp_get_u32(&d->r, &d->m->seq);
	return get_str(d, 0) ?: get_str(d, 1);
}

/* ---- the table ---- */

#define CTX(c)	(1u << (c))
#define AC	CTX(BFP_CTX_AGENT_CONTROL)
#define AD	CTX(BFP_CTX_AGENT_DATA)
#define HG	CTX(BFP_CTX_HQ_GREETING)
#define HC	CTX(BFP_CTX_HQ_CONTROL)
#define HD	CTX(BFP_CTX_HQ_DATA)

struct msg_ops {
	const char *name;
	uint8_t ctx;		/* CTX() bits where it may arrive */
	uint8_t strings;	/* UTF fields it carries */
	bool sequenced;
	int (*enc)(struct bft_buf *b, unsigned int v, const struct bfp_msg *m);
	int (*dec)(struct dec *d);
};

static const struct msg_ops ops[100] = {
	[BFP_HELLO] = { "hello", HG, 0, false, enc_hello, dec_hello },
	[BFP_CONFIG] = { "configuration", AC, 1, false, enc_config, dec_config },
	[BFP_START] = { "start", AC, 0, false, enc_empty, dec_empty },
	[BFP_STOP] = { "stop", AC, 0, false, enc_empty, dec_empty },
	[BFP_PAUSE] = { "pause", AC, 0, false, enc_empty, dec_empty },
	[BFP_UNPAUSE] = { "unpause", AC, 0, false, enc_empty, dec_empty },
	[BFP_SUSPEND] = { "suspend", AC, 0, false, enc_empty, dec_empty },
	[BFP_UNSUSPEND] = { "unsuspend", AC, 0, false, enc_empty, dec_empty },
	[BFP_HEARTBEAT] = { "heartbeat", HC, 0, false, enc_heartbeat,
			    dec_heartbeat },
	[BFP_DATA_BREAK] = { "data_break", HC, 0, false, enc_data_break,
			     dec_data_break },
	[BFP_MAP_THREAD] = { "map_thread_name", HD, 1, false, enc_map_thread,
			     dec_map_thread },
	[BFP_MAP_METHOD] = { "map_method_signature", HD, 1, false,
			     enc_map_method, dec_map_method },
	[BFP_MAP_EXCEPTION] = { "map_exception", HD, 1, false,
				enc_map_exception, dec_map_exception },
	[BFP_METHOD_ENTRY] = { "method_entry", HD, 0, true, enc_call,
			       dec_entry },
	[BFP_METHOD_EXIT] = { "method_exit", HD, 0, true, enc_call, dec_exit },
	[BFP_EXCEPTION] = { "exception", HD, 0, true, enc_exception,
			    dec_exception },
	[BFP_EXCEPTION_BUBBLE] = { "exception_bubble", HD, 0, true, enc_bubble,
				   dec_bubble },
	[BFP_DATA_HELLO] = { "data_hello", HG, 0, false, enc_data_hello,
			     dec_data_hello },
	[BFP_DATA_HELLO_REPLY] = { "data_hello_reply", AD, 0, false, enc_empty,
				   dec_empty },
	[BFP_CLASS_TRANSFORMED] = { "class_transformed", HC, 1, false,
				    enc_text, dec_text },
	[BFP_CLASS_IGNORED] = { "class_ignored", HC, 1, false, enc_text,
				dec_text },
	[BFP_CLASS_FAILED] = { "class_transform_failed", HC, 1, false,
			       enc_text, dec_text },
	[BFP_MARKER] = { "marker", HD, 2, true, enc_marker, dec_marker },
	[BFP_DATA_END] = { "data_end", HC, 0, false, enc_data_end,
			   dec_data_end },
	/* Either end may report a fatal error, on any connection. */
	[BFP_ERROR] = { "error", AC | AD | HG | HC | HD, 1, false, enc_text,
			dec_text },
};

static const struct msg_ops *lookup(unsigned int id)
{
	if (id >= sizeof(ops) / sizeof(ops[0]) || !ops[id].name)
		return NULL;
	return &ops[id];
}

const char *bfp_id_name(unsigned int id)
{
	const struct msg_ops *o = lookup(id);

	return o ? o->name : NULL;
}

bool bfp_id_sequenced(unsigned int id)
{
	const struct msg_ops *o = lookup(id);

	return o && o->sequenced;
}

bool bfp_mode_valid(unsigned int mode)
{
	return mode == BFP_MODE_INITIALIZING || mode == BFP_MODE_TRACING ||
	       mode == BFP_MODE_PAUSED || mode == BFP_MODE_SUSPENDED ||
	       mode == BFP_MODE_SHUTDOWN;
}

int bfp_encode(struct bft_buf *out, unsigned int version,
	       const struct bfp_msg *m)
{
	const struct msg_ops *o = lookup(m->id);
	size_t start = out->len;
	int err;

	if (!o || version < BFP_VERSION_MIN || version > BFP_VERSION_MAX)
		return -EINVAL;
	err = bfp_put_u8(out, m->id) ?: o->enc(out, version, m);
	if (err)
		out->len = start;	/* never leave half a message */
	return err;
}

void bfp_msg_free(struct bfp_msg *m)
{
	bft_buf_free(&m->store);
	bfp_config_free(&m->own_config);
	m->config = NULL;
	m->str = m->str2 = NULL;
}

int bfp_decode(const uint8_t *p, size_t n, unsigned int version,
	       enum bfp_ctx ctx, struct bfp_msg *m, struct bfp_error *err)
{
	struct bft_buf store = m->store;
	const struct msg_ops *o;
	struct dec d;
	size_t room;
	int ret;

	err->code = 0;
	err->msg[0] = 0;
	if (!n)
		return 0;
	bfp_config_free(&m->own_config);
	memset(m, 0, sizeof(*m));
	m->store = store;
	m->store.len = 0;
	m->id = p[0];
	d.m = m;
	d.version = version;
	d.err = err;
	o = lookup(p[0]);
	if (!o)
		return fail(&d, -EPROTO, "unknown message id %u", p[0]);
	if (ctx != BFP_CTX_ANY && !(o->ctx & CTX(ctx)))
		return fail(&d, -EPROTO, "unexpected message %s (id %u) here",
			    o->name, p[0]);
	if (version < BFP_VERSION_MIN || version > BFP_VERSION_MAX)
		return fail(&d, -EPROTO, "unsupported protocol version %u",
			    version);
	/*
	 * Room for every string of the message, so that none moves.  A
	 * string decodes to no more bytes than it takes on the wire, plus
	 * its NUL: a short message needs no 64 KiB per string.
	 */
	room = (size_t)o->strings * (BFP_UTF_MAX + 1);
	if (n - 1 + o->strings < room)
		room = n - 1 + o->strings;
	if (o->strings && bft_buf_reserve(&m->store, room))
		return fail(&d, -ENOMEM, "out of memory");
	bfp_rd_init(&d.r, p + 1, n - 1);
	ret = o->dec(&d);
	if (ret)
		return ret;
	if (d.r.short_read)
		return 0;
	return (int)(1 + d.r.pos);
}
