// SPDX-License-Identifier: GPL-2.0
/*
 * Input a hostile peer or a broken file can send, each one a case that once
 * crashed, hung or silently changed a decoder's result: a deep chain of
 * Java class descriptors, deep JSON, stream time that wrapped, an ELF file
 * without functions, configuration strings too long or holding NUL.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "bft_test.h"
#include "bfp_config.h"
#include "bfp_joss.h"
#include "bft_resolve.h"

/* TC_CLASSDESC "" suid 0 flags SC_SERIALIZABLE, no fields, no annotation */
static const uint8_t empty_desc[] = {
	TC_CLASSDESC, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	SC_SERIALIZABLE, 0, 0, TC_ENDBLOCKDATA,
};

/* An object whose class has n superclasses, each a new descriptor. */
static uint8_t *superclass_chain(size_t n, size_t *len)
{
	size_t per = sizeof(empty_desc), i;
	uint8_t *b = malloc(5 + n * per + 1), *p = b;

	if (!b)
		return NULL;
	*p++ = 0xac;
	*p++ = 0xed;
	*p++ = 0;
	*p++ = JOSS_VERSION;
	*p++ = TC_OBJECT;
	for (i = 0; i < n; i++, p += per)
		memcpy(p, empty_desc, per);
	*p++ = TC_NULL;
	*len = (size_t)(p - b);
	return b;
}

TEST(a_deep_superclass_chain_is_refused_not_followed)
{
	size_t n = 100000, len;
	uint8_t *b = superclass_chain(n, &len);
	struct joss_value *root;
	struct joss *j;
	char err[160] = "";

	ASSERT_NE(NULL, b);
	ASSERT_LT(len, 16u << 20);	/* fits in one message */
	EXPECT_EQ(-EPROTO, joss_parse(b, len, &j, &root, err, sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "nested too deeply")) TH_LOG("%s", err);
	EXPECT_EQ(NULL, j);
	free(b);
}

TEST(a_short_superclass_chain_still_decodes)
{
	size_t len;
	uint8_t *b = superclass_chain(3, &len);
	struct joss_value *root;
	struct joss *j;
	char err[160] = "";

	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, joss_parse(b, len, &j, &root, err, sizeof(err)))
		TH_LOG("%s", err);
	EXPECT_EQ(JOSS_OBJECT, root->kind);
	EXPECT_EQ(3u, root->nlevels);
	joss_free(j);
	free(b);
}

TEST(deeply_nested_json_configuration_is_refused)
{
	size_t n = 200000, i;
	char *s = malloc(2 * n + 1);
	struct bfp_config c;
	char err[200] = "";

	ASSERT_NE(NULL, s);
	for (i = 0; i < n; i++) {
		s[i] = '[';
		s[2 * n - 1 - i] = ']';
	}
	s[2 * n] = 0;
	EXPECT_EQ(-EPROTO, bfp_config_decode_json(s, 2 * n, &c, err,
						  sizeof(err)));
	EXPECT_NE(NULL, strstr(err, "JSON")) TH_LOG("%s", err);
	free(s);
}

TEST_HARNESS_MAIN
