// SPDX-License-Identifier: GPL-2.0
/* Rendering of pagetierctl status: the table and the JSON. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "status.h"

static char *render(bool as_json, const struct pt_context *c, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (as_json)
		pt_status_json(f, c, n, "pagetier.ko", 0);
	else
		pt_status_table(f, c, n);
	fclose(f);
	return buf;
}

static void fill(struct pt_context *c)
{
	struct pt_policy p = { .name = "alpha", .class = PT_CLASS_BESTEFFORT };

	pt_context_init(c, &p, "/sys/fs/cgroup", "/pt/al\"pha", 4242, 0, 16);
	c->idle.state = PT_STATE_IDLE;
	c->sample.memory_current = 3ULL << 20;
	c->sample.anon = 1ULL << 20;
	c->sample.swap_current = 255ULL << 20;
	c->tier_pages = 65536;
	c->n_wakes = 1;
	c->last_wake_ms = 12;
}

static void test_fmt_bytes(void **state)
{
	char b[16];

	(void)state;
	pt_fmt_bytes(b, sizeof(b), 0);
	assert_string_equal(b, "0");
	pt_fmt_bytes(b, sizeof(b), 1023);
	assert_string_equal(b, "1023");
	pt_fmt_bytes(b, sizeof(b), 256ULL << 20);
	assert_string_equal(b, "256.0M");
	pt_fmt_bytes(b, sizeof(b), 3ULL << 29);
	assert_string_equal(b, "1.5G");
}

static void test_table(void **state)
{
	struct pt_context c;
	char *out;

	(void)state;
	fill(&c);
	out = render(false, &c, 1);
	assert_non_null(strstr(out, "CONTAINER"));
	assert_non_null(strstr(out, "alpha"));
	assert_non_null(strstr(out, "idle"));
	assert_non_null(strstr(out, "256.0M"));	/* on tier: 65536 pages */
	assert_non_null(strstr(out, "12ms"));
	free(out);
	pt_context_release(&c);
	out = render(false, NULL, 0);
	assert_non_null(strstr(out, "no opted-in container"));
	free(out);
}

static void test_json(void **state)
{
	struct pt_context c;
	char *out;

	(void)state;
	fill(&c);
	out = render(true, &c, 1);
	assert_non_null(strstr(out, "\"backend\":\"pagetier.ko\""));
	assert_non_null(strstr(out, "\"cgroup\":\"/pt/al\\\"pha\""));	/* escaped */
	assert_non_null(strstr(out, "\"cgroup_id\":4242"));
	assert_non_null(strstr(out, "\"state\":\"idle\""));
	assert_non_null(strstr(out, "\"tier_bytes\":268435456"));
	assert_non_null(strstr(out, "\"prefetch_precision\":-1.000"));
	free(out);
	pt_context_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_bytes),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
