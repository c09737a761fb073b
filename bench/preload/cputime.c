// SPDX-License-Identifier: GPL-2.0
/*
 * cputime CMD [ARGS...]: runs CMD (its output to /dev/null) and prints its user+system CPU
 * seconds, from wait4()'s rusage (microseconds; /usr/bin/time rounds to 10 ms). Exits with
 * CMD's status. For bench/preload/run.sh: on a shared machine the CPU time is the steadier
 * figure, since it does not count time spent waiting for a core.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: cputime CMD [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid) {
		perror("wait4");
		return 2;
	}
	printf("%.6f\n", (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
