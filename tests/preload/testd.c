// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal stand-in for pagetierd's preload side, for host tests of libpagetier.so: runs
 * daemon/preload_server.c on a socket, opts in every peer (or those whose cgroup starts with
 * --optin), drains the rings every 20 ms and, on SIGTERM/SIGINT or after --duration, prints
 * what it saw as "key value" lines (to --report or stdout).
 *
 *   pt_testd --sock PATH [--optin PREFIX] [--trim-every MS] [--wake-every MS]
 *            [--duration S] [--report FILE] [--check-maps] [--wake-log FILE]
 *
 * --wake-log: one line per PT_PRELOAD_F_WAKE heartbeat, "<CLOCK_MONOTONIC ns> <pid>", as
 * it is drained (the drain runs at once on a doorbell, every 20 ms otherwise).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "preload_server.h"

static volatile sig_atomic_t stop;
static const char *optin_prefix;
static uint64_t by_type[PT_PRELOAD_REC_MAX];
static uint64_t wakes, big_allocs, big_frees, pids_seen, outside_maps, maps_checked;
static pid_t last_pids[4096];
static int check_maps;
static FILE *wake_log;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static bool optin(pid_t pid, const char *cgroup, void *arg)
{
	(void)pid;
	(void)arg;
	return !optin_prefix || strncmp(cgroup, optin_prefix, strlen(optin_prefix)) == 0;
}

static void on_peer(pid_t pid, const char *cgroup, bool up, void *arg)
{
	(void)arg;
	if (up) {
		pids_seen++;
		if (pids_seen <= sizeof(last_pids) / sizeof(last_pids[0]))
			last_pids[pids_seen - 1] = pid;
	}
	pt_debug("peer %d %s %s", (int)pid, cgroup, up ? "up" : "down");
}

/* The caller's check the decoder leaves to us: is the range in the peer's mappings? */
static bool in_maps(pid_t pid, uint64_t addr, uint64_t len)
{
	char path[64], line[512];
	uint64_t lo, hi;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;	/* gone: nothing to check against */
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && addr >= lo &&
		    addr + len <= hi)
			found = true;
	fclose(f);
	return found;
}

static void on_record(pid_t pid, const char *cgroup, const struct pt_preload_event *ev,
		      void *arg)
{
	(void)cgroup;
	(void)arg;
	by_type[ev->type]++;
	if (ev->type == PT_PRELOAD_REC_HEARTBEAT && (ev->flags & PT_PRELOAD_F_WAKE)) {
		wakes++;
		if (wake_log) {
			struct timespec t;

			clock_gettime(CLOCK_MONOTONIC, &t);
			fprintf(wake_log, "%" PRIu64 " %d\n",
				(uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec, (int)pid);
			fflush(wake_log);
		}
	}
	if (ev->type == PT_PRELOAD_REC_ALLOC && (ev->flags & PT_PRELOAD_F_BIG)) {
		big_allocs++;
		/* Still allocated, most likely: sample a few against /proc/PID/maps. */
		if (check_maps && maps_checked < 200) {
			maps_checked++;
			if (!in_maps(pid, ev->addr, ev->len))
				outside_maps++;
		}
	}
	if (ev->type == PT_PRELOAD_REC_FREE && (ev->flags & PT_PRELOAD_F_BIG))
		big_frees++;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "sock", required_argument, NULL, 's' },
		{ "optin", required_argument, NULL, 'o' },
		{ "trim-every", required_argument, NULL, 't' },
		{ "wake-every", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "report", required_argument, NULL, 'r' },
		{ "check-maps", no_argument, NULL, 'm' },
		{ "wake-log", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct pt_preload_server_opts opts;
	struct pt_preload_server_stats st;
	struct pt_preload_server *s;
	const char *sock = NULL, *report = NULL;
	uint64_t trim_every = 0, wake_every = 0, duration = 0, start, last_trim, last_wake;
	uint64_t trim_requests = 0, wake_requests = 0;
	struct epoll_event ev;
	FILE *out = stdout;
	int c, err, epfd;

	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'o': optin_prefix = optarg; break;
		case 't': trim_every = strtoull(optarg, NULL, 10); break;
		case 'w': wake_every = strtoull(optarg, NULL, 10); break;
		case 'd': duration = strtoull(optarg, NULL, 10) * 1000; break;
		case 'r': report = optarg; break;
		case 'm': check_maps = 1; break;
		case 'l':
			wake_log = fopen(optarg, "we");
			if (!wake_log) {
				perror(optarg);
				return 2;
			}
			break;
		default: return 2;
		}
	}
	pt_log_set_level(getenv("PT_DEBUG") ? PT_LOG_DEBUG : PT_LOG_WARN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	pt_preload_server_default_opts(&opts);
	opts.on_peer = on_peer;
	err = pt_preload_server_open(&s, sock, &opts, optin, NULL);
	if (err) {
		fprintf(stderr, "pt_testd: %s\n", strerror(-err));
		return 1;
	}
	/* The server's fd is itself an epoll fd: nest it, as pagetierd's loop would. */
	epfd = epoll_create1(EPOLL_CLOEXEC);
	ev = (struct epoll_event){ .events = EPOLLIN };
	epoll_ctl(epfd, EPOLL_CTL_ADD, pt_preload_server_fd(s), &ev);
	fprintf(stderr, "pt_testd: listening on %s\n", sock ? sock : PT_PRELOAD_SOCK_PATH);
	start = last_trim = last_wake = now_ms();
	while (!stop && (!duration || now_ms() - start < duration)) {
		epoll_wait(epfd, &ev, 1, 20);
		pt_preload_server_drain(s, on_record, NULL);
		if (trim_every && now_ms() - last_trim >= trim_every) {
			last_trim = now_ms();
			trim_requests += pt_preload_server_request_trim(s, 0) == 0;
		}
		if (wake_every && now_ms() - last_wake >= wake_every) {
			last_wake = now_ms();
			wake_requests += pt_preload_server_arm_wake(s, 0) == 0;
		}
	}
	pt_preload_server_drain(s, on_record, NULL);
	pt_preload_server_stats(s, &st);
	if (report)
		out = fopen(report, "w");
	if (!out)
		out = stdout;
	fprintf(out, "peers_registered %" PRIu64 "\npeers_rejected %" PRIu64
		"\nbad_hellos %" PRIu64 "\npeers_now %u\n", st.accepted_peers, st.rejected_peers,
		st.bad_hellos, st.peers);
	fprintf(out, "records %" PRIu64 "\nthrottled %" PRIu64 "\nproducer_dropped %" PRIu64
		"\ndoorbells %" PRIu64 "\ntrims %" PRIu64 "\n", st.records, st.throttled,
		st.producer_dropped, st.doorbells, st.trims);
	for (int i = 0; i < PT_PRELOAD_REJ_NR; i++)
		fprintf(out, "rejected_%s %" PRIu64 "\n", pt_preload_reject_name(i), st.rejected[i]);
	fprintf(out, "rec_alloc %" PRIu64 "\nrec_free %" PRIu64 "\nrec_mmap %" PRIu64
		"\nrec_munmap %" PRIu64 "\nrec_mremap %" PRIu64 "\nrec_heartbeat %" PRIu64 "\n",
		by_type[1], by_type[2], by_type[3], by_type[4], by_type[5], by_type[6]);
	fprintf(out, "big_allocs %" PRIu64 "\nbig_frees %" PRIu64 "\nwake_heartbeats %" PRIu64
		"\ntrim_requests %" PRIu64 "\nwake_requests %" PRIu64 "\nmaps_checked %" PRIu64
		"\noutside_maps %" PRIu64 "\n", big_allocs, big_frees, wakes, trim_requests,
		wake_requests, maps_checked, outside_maps);
	if (out != stdout)
		fclose(out);
	pt_preload_server_close(s);
	close(epfd);
	return 0;
}
