// SPDX-License-Identifier: MIT
#include "exporter/procmetrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct proc_stat {
	unsigned long long utime, stime, starttime, vsize;
	long long rss;
};

/* Fields 14, 15, 22, 23 and 24 of /proc/self/stat (after the comm, which
 * may hold spaces and parentheses: scan from the last ')'). */
static int read_stat(struct proc_stat *ps)
{
	char buf[4096], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itrealvalue starttime
	 * vsize rss */
	if (sscanf(p + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d"
		   " %llu %llu %lld",
		   &ps->utime, &ps->stime, &ps->starttime, &ps->vsize, &ps->rss) != 5)
		return -1;
	return 0;
}

static long long boot_time(void)
{
	char line[256];
	long long bt = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &bt) == 1)
			break;
	fclose(f);
	return bt;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory stream's own */
}

static void one(struct page *p, bool om, const char *name, const char *type, const char *help,
		double v)
{
	size_t n = strlen(name);

	if (om && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	page_printf(p, "# HELP %.*s %s\n# TYPE %.*s %s\n%s ", (int)n, name, help, (int)n, name,
		    type, name);
	page_double(p, v);
	page_putc(p, '\n');
}

void procmetrics_render(struct page *p, bool om)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct proc_stat ps;
	struct rlimit rl;
	long long bt = boot_time();
	long fds = open_fds();

	if (tick <= 0)
		tick = 100;
	if (read_stat(&ps) == 0) {
		one(p, om, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.",
		    (double)(ps.utime + ps.stime) / (double)tick);
		one(p, om, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
		    (double)ps.rss * (double)page);
		one(p, om, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
		    (double)ps.vsize);
		if (bt >= 0)
			one(p, om, "process_start_time_seconds", "gauge",
			    "Start time of the process since unix epoch in seconds.",
			    (double)bt + (double)ps.starttime / (double)tick);
	}
	if (fds >= 0)
		one(p, om, "process_open_fds", "gauge", "Number of open file descriptors.",
		    (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		one(p, om, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
		    (double)rl.rlim_cur);
}
