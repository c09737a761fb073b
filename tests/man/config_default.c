// SPDX-License-Identifier: GPL-2.0
/*
 * config_default DIR: loads the configuration in DIR with the daemon's own parser and
 * says whether it is the built-in default configuration. tests/man/check_man.py writes
 * one key at a time, with the default pagetierd.conf(5) gives it, and so checks the
 * manual's defaults against the code without a hand-kept list of them.
 *
 * Prints "same" (exit 0) or "differs" (exit 1); a configuration that does not load is
 * exit 2, with the parser's errors.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"

int main(int argc, char **argv)
{
	struct pt_config loaded, builtin;
	char err[PT_ERRBUF_MAX];
	int same;

	if (argc != 2) {
		fprintf(stderr, "usage: config_default DIR\n");
		return 2;
	}
	if (pt_config_load(&loaded, argv[1], false, err)) {
		fputs(err, stderr);
		return 2;
	}
	pt_config_defaults(&builtin);
	/* Which keys [defaults] set is bookkeeping, not a value. */
	loaded.defaults.set_mask = 0;
	builtin.defaults.set_mask = 0;
	same = loaded.n_policies == 0 && memcmp(&loaded, &builtin, sizeof(loaded)) == 0;
	pt_config_free(&loaded);
	puts(same ? "same" : "differs");
	return same ? 0 : 1;
}
