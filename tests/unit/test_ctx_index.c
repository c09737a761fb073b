// SPDX-License-Identifier: GPL-2.0
/* The context index: lookups by cgroup id and by path stay right as contexts come and go. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "ctx_index.h"

#define N 1000

static void fill(struct pt_context *c, size_t i)
{
	memset(c, 0, sizeof(*c));
	c->cgroup_id = 1000 + i * 7;
	snprintf(c->relpath, sizeof(c->relpath), "/pods/p%zu", i);
}

static void test_lookups(void **state)
{
	struct pt_context *ctxs = calloc(N + 1, sizeof(*ctxs));
	struct pt_ctx_index x = { 0 };
	size_t n = 0;

	(void)state;
	assert_non_null(ctxs);
	for (; n < N; n++) {
		fill(&ctxs[n], n);
		pt_ctx_index_added(&x, ctxs, n + 1);
	}
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(pt_ctx_index_find_id(&x, ctxs, n, 1000 + i * 7), (long)i);
		assert_int_equal(pt_ctx_index_find_path(&x, ctxs, n, ctxs[i].relpath,
							strlen(ctxs[i].relpath)), (long)i);
	}
	assert_int_equal(pt_ctx_index_find_id(&x, ctxs, n, 1001), -1);
	/* A prefix of a path is not that path; a path given by length is. */
	assert_int_equal(pt_ctx_index_find_path(&x, ctxs, n, "/pods/p1", 7), -1);
	assert_int_equal(pt_ctx_index_find_path(&x, ctxs, n, "/pods/p12/sub", 9), 12);
	/* Drop #5 the manager's way (the last moves in) and invalidate. */
	ctxs[5] = ctxs[--n];
	pt_ctx_index_invalidate(&x);
	assert_int_equal(pt_ctx_index_find_id(&x, ctxs, n, 1000 + 5 * 7), -1);
	assert_int_equal(pt_ctx_index_find_id(&x, ctxs, n, 1000 + (N - 1) * 7), 5);
	assert_int_equal(pt_ctx_index_find_path(&x, ctxs, n, "/pods/p999", 10), 5);
	/* An append without a word to the index (a caller filling the array itself). */
	fill(&ctxs[n], N + 5);
	n++;
	assert_int_equal(pt_ctx_index_find_id(&x, ctxs, n, 1000 + (N + 5) * 7), (long)n - 1);
	pt_ctx_index_free(&x);
	/* Empty. */
	assert_int_equal(pt_ctx_index_find_id(&x, ctxs, 0, 1000), -1);
	pt_ctx_index_free(&x);
	free(ctxs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookups),
	};

	return cmocka_run_group_tests_name("ctx_index", tests, NULL, NULL);
}
