/* SPDX-License-Identifier: GPL-2.0 */
/* Test helpers: build small file trees (config dirs, fake cgroup trees) in a temp dir. */
#ifndef PAGETIER_TEST_FIXTURE_H
#define PAGETIER_TEST_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline char *fx_tmpdir(void)
{
	char *d = strdup("/tmp/pagetier-unit-XXXXXX");

	if (!d || !mkdtemp(d))
		abort();
	chmod(d, 0755);
	return d;
}

/* Writes @text to @dir/@rel, creating parent directories (mode 0755). */
static inline void fx_write(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
	chmod(path, 0644);
}

static inline void fx_rmtree(char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "warning: could not remove %s\n", dir);
	free(dir);
}

#endif
