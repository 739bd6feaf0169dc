// SPDX-License-Identifier: MIT
/*
 * From a resolved probe to the kernel and back: the perf_event_attr of a
 * uprobe (through the uprobe PMU, whose retprobe bit and ref_ctr_offset
 * field are read from its format/ directory, not assumed) or a tracepoint,
 * and an argument's value from a sample (a raw tracepoint field, or a
 * register or USDT operand from the sampled user registers).
 */
#include "agent/perf/probe_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/perf/sampler.h"

#define PROBE_PMU_DIR "/sys/bus/event_source/devices/uprobe"
#define PROBE_KPMU_DIR "/sys/bus/event_source/devices/kprobe"

/* ---- perf_event_attr ---- */

/* A small sysfs file, without its newline. */
static int read_small(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* A format/ entry "config:LO" or "config:LO-HI": the bits of attr.config. */
static int format_bits(const char *text, unsigned *lo, unsigned *hi)
{
	unsigned long a, b;
	char *end;

	if (strncmp(text, "config:", 7) != 0 || !isdigit((unsigned char)text[7]))
		return -EINVAL;
	errno = 0;
	a = strtoul(text + 7, &end, 10);
	b = a;
	if (!errno && *end == '-' && isdigit((unsigned char)end[1]))
		b = strtoul(end + 1, &end, 10);
	if (errno || *end || a > b || b > 63)
		return -EINVAL;
	*lo = (unsigned)a;
	*hi = (unsigned)b;
	return 0;
}

int probe_attr_at(const struct probe *p, const char *pmu_dir, struct perf_event_attr *attr,
		  char *err, size_t errlen)
{
	char buf[64];
	unsigned lo, hi;
	uint64_t type, config = 0;
	struct probe_msg m;
	bool kernel;
	int ret;

	probe_msg_init(&m, err, errlen);
	if (!p || !attr) {
		probe_msg_add(&m, "no probe");
		return -EINVAL;
	}
	if (attr->size == 0)
		attr->size = sizeof(*attr);
	if (p->kind == PROBE_TRACEPOINT) {
		attr->type = PERF_TYPE_TRACEPOINT;
		attr->config = p->tp_id;
		return 0;
	}
	kernel = p->kind == PROBE_KPROBE;
	if (kernel ? !p->symbol : !p->path) {
		probe_msg_add(&m, "%s: not resolved", p->label ? p->label : "probe");
		return -EINVAL;
	}
	if (!pmu_dir)
		pmu_dir = kernel ? PROBE_KPMU_DIR : PROBE_PMU_DIR;

	ret = read_small(pmu_dir, "type", buf, sizeof(buf));
	if (ret == -ENOENT) {
		probe_msg_add(&m,
			      "this kernel has no %s PMU (%s missing): %s need Linux 4.17+ "
			      "built with %s",
			      kernel ? "kprobe" : "uprobe", pmu_dir, kernel ? "kprobes" : "uprobes",
			      kernel ? "CONFIG_KPROBE_EVENTS" : "CONFIG_UPROBE_EVENTS");
		return -ENOENT;
	}
	if (ret < 0) {
		probe_msg_add(&m, "%s/type: %s", pmu_dir, strerror(-ret));
		return ret;
	}
	if (probe_spec_u64(buf, &type) < 0 || type > UINT32_MAX) {
		probe_msg_add(&m, "%s/type: unexpected \"%s\"", pmu_dir, buf);
		return -EIO;
	}
	if (p->retprobe) {
		ret = read_small(pmu_dir, "format/retprobe", buf, sizeof(buf));
		if (ret == -ENOENT) {
			probe_msg_add(&m, "the %s PMU has no retprobe bit (%s/format/retprobe)",
				      kernel ? "kprobe" : "uprobe", pmu_dir);
			return -EOPNOTSUPP;
		}
		if (ret < 0 || format_bits(buf, &lo, &hi) < 0 || lo != hi) {
			probe_msg_add(&m, "%s/format/retprobe: unexpected \"%s\"", pmu_dir,
				      ret < 0 ? "" : buf);
			return -EIO;
		}
		config |= UINT64_C(1) << lo;
	}
	if (p->ref_ctr) {
		unsigned width;

		ret = read_small(pmu_dir, "format/ref_ctr_offset", buf, sizeof(buf));
		if (ret == -ENOENT) {
			probe_msg_add(&m,
				      "%s has a semaphore but this kernel's uprobe PMU takes no "
				      "ref_ctr_offset (Linux 4.20+)",
				      p->label ? p->label : "probe");
			return -EOPNOTSUPP;
		}
		if (ret < 0 || format_bits(buf, &lo, &hi) < 0) {
			probe_msg_add(&m, "%s/format/ref_ctr_offset: unexpected \"%s\"", pmu_dir,
				ret < 0 ? "" : buf);
			return -EIO;
		}
		width = hi - lo + 1;
		if (width < 64 && p->ref_ctr >> width) {
			probe_msg_add(&m, "semaphore offset %#" PRIx64 " does not fit %u bits",
				      p->ref_ctr, width);
			return -ERANGE;
		}
		if ((config >> lo) & (width < 64 ? (UINT64_C(1) << width) - 1 : UINT64_MAX)) {
			probe_msg_add(&m, "%s/format: retprobe and ref_ctr_offset overlap",
				      pmu_dir);
			return -EIO;
		}
		config |= p->ref_ctr << lo;
	}
	attr->type = (uint32_t)type;
	attr->config = config;
	/* config1 and config2 are kprobe_func/probe_offset or uprobe_path/probe_offset */
	attr->config1 = (uint64_t)(uintptr_t)(kernel ? p->symbol : p->path);
	attr->config2 = p->offset;
	return 0;
}

int probe_attr(const struct probe *p, struct perf_event_attr *attr)
{
	return probe_attr_at(p, NULL, attr, NULL, 0);
}

struct mem_ctx {
	pid_t pid;
};

static int read_live(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem_ctx *m = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (process_vm_readv(m->pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	return -errno;
}

int probe_arg_value(const struct probe *p, int a, const struct usdt_arg *site_arg,
		    const struct sample *s, uint64_t regs_mask, int64_t *out)
{
	const struct probe_argdef *d;
	uint64_t regs[64] = { 0 }, valid = 0;
	struct mem_ctx mc;
	size_t k = 0;

	if (!p || a < 0 || a >= p->nargs || !s || !out)
		return -EINVAL;
	d = &p->args[a];
	if (d->field) {
		const uint8_t *raw = s->raw;
		uint64_t v = 0;
		int off = d->field_offset, size = d->field_size;

		if (!raw || off < 0 || size <= 0 || size > 8 ||
		    (uint64_t)off + (uint64_t)size > s->raw_size)
			return -ENOENT;
		if (d->field_dynamic) {
			uint32_t loc;

			memcpy(&loc, raw + off, 4);
			*out = loc >> 16; /* a dynamic field: its length */
			return 0;
		}
		memcpy(&v, raw + off, (size_t)size); /* little-endian host */
		if (d->field_signed && size < 8 && (v >> (size * 8 - 1)) & 1)
			v |= ~0ull << (size * 8);
		*out = (int64_t)v;
		return 0;
	}
	/* Registers arrive packed in mask order; unpack by perf register number. */
	for (int r = 0; s->regs && r < 64; r++) {
		if (!(regs_mask & (1ull << r)))
			continue;
		regs[r] = s->regs[k++];
		valid |= 1ull << r;
	}
	mc.pid = (pid_t)s->pid;
	return usdt_arg_value(site_arg ? site_arg : &d->a, regs, valid, read_live, &mc, out);
}
