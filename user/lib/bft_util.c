// SPDX-License-Identifier: GPL-2.0
/*
 * bft_util: the small helpers every bftrace tool needs the same way.
 * See bft_util.h.
 */
#include <stdio.h>

#include "bft_util.h"

void bft_vlog(const char *prog, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

size_t bft_utf8_len(const unsigned char *s)
{
	size_t n, i;
	unsigned int cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void bft_json_string(const char *s,
		     void (*put)(const char *p, size_t n, void *arg),
		     void *arg)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;

	put("\"", 1, arg);
	while (*p) {
		const char *esc = *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" :
				  *p == '\n' ? "\\n" : *p == '\t' ? "\\t" :
				  *p == '\r' ? "\\r" : NULL;
		char u[6] = { '\\', 'u', '0', '0' };
		size_t n;

		if (esc) {
			put(esc, 2, arg);
			p++;
		} else if (*p < 0x20) {
			u[4] = hex[*p >> 4];
			u[5] = hex[*p++ & 15];
			put(u, 6, arg);
		} else if (!(n = bft_utf8_len(p))) {
			put("\\ufffd", 6, arg);
			p++;
		} else {
			put((const char *)p, n, arg);
			p += n;
		}
	}
	put("\"", 1, arg);
}
