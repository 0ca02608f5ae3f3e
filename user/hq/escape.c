// SPDX-License-Identifier: GPL-2.0
/*
 * The escaping of names and marker text in bfhq's text files (the live
 * copy's names and markers, the summary, the log), and its inverse: one
 * file, so that what is written and what is read back cannot drift
 * apart.  JSON strings too, as the library writes them for every tool.
 */
#include <stdlib.h>

#include "bft_util.h"
#include "escape.h"

void hq_escape(struct bft_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char e[4] = { '\\', 'x' };
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\') {
			bft_buf_append(b, "\\\\", 2);
		} else if (!c) {
			bft_buf_append(b, "\\0", 2);
		} else if (c < 0x20 || c == 0x7f) {
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			bft_buf_append(b, e, 4);
		} else {
			bft_buf_append(b, &s[i], 1);
		}
	}
}

/* The bytes of s (n bytes) once hq_escape()d. */
size_t hq_escape_len(const char *s, size_t n)
{
	size_t i, len = n;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		len += c == '\\' || !c ? 1 : c < 0x20 || c == 0x7f ? 3 : 0;
	}
	return len;
}

void live_unescape(const char *s, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			*out++ = s[i];
			continue;
		}
		i++;
		if (s[i] == '0') {
			break;	/* a C string ends at the first NUL anyway */
		} else if (s[i] == 'x' && i + 2 < n) {
			char hex[3] = { s[i + 1], s[i + 2], 0 };

			*out++ = (char)strtoul(hex, NULL, 16);
			i += 2;
		} else {
			*out++ = s[i];
		}
	}
	*out = 0;
}

static void put_buf(const char *p, size_t n, void *arg)
{
	bft_buf_append(arg, p, n);
}

void hq_json_string(struct bft_buf *b, const char *s)
{
	bft_json_string(s, put_buf, b);
}
