// SPDX-License-Identifier: MIT
/*
 * cgperf-agent wire-dump FILE...: decode pushed batches (gzip'd or plain
 * protobuf, as a collector receives them) with the same decoder and
 * validator the exporter uses, and print each as one JSON object. For
 * debugging a push and for the tests that check what arrived.
 *
 * Stacks are printed as folded lines ("folded"); their module data, when
 * sent, as "frame_modules": one list per stack, parallel to its frames,
 * of 1 + an index into the batch's "modules" (0: none), [] when the stack
 * has no module data.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "lib/json.h"
#include "lib/slurp.h"
#include "wire/wire.h"

static void str(const Cgperf__V1__Batch *m, uint32_t id)
{
	json_write_string(stdout, wire_string(m, id));
}

static void dump(const Cgperf__V1__Batch *m)
{
	printf("{\"seq\":%" PRIu64 ",\"host\":", m->seq);
	json_write_string(stdout, m->host);
	fputs(",\"agent_id\":", stdout);
	json_write_string(stdout, m->agent_id);
	printf(",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"cgroups\":[", m->start_ns,
	       m->end_ns);
	for (size_t i = 0; i < m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = m->cgroups[i];

		fputs(i ? ",{\"path\":" : "{\"path\":", stdout);
		str(m, c->path);
		printf(",\"id\":%" PRIu64 ",\"container_id\":", c->id);
		str(m, c->container_id);
		fputs(",\"unit\":", stdout);
		str(m, c->unit);
		fputc('}', stdout);
	}
	fputs("],\"counters\":[", stdout);
	for (size_t i = 0; i < m->n_counters; i++) {
		const Cgperf__V1__Counter *c = m->counters[i];

		printf("%s{\"cgroup\":%" PRIu32 ",\"event\":", i ? "," : "", c->cgroup);
		str(m, c->event);
		printf(",\"value\":%" PRIu64 ",\"supported\":%s}", c->value,
		       c->supported ? "true" : "false");
	}
	fputs("],\"profiles\":[", stdout);
	for (size_t i = 0; i < m->n_profiles; i++) {
		const Cgperf__V1__Profile *p = m->profiles[i];
		uint64_t samples = 0;

		for (size_t k = 0; k < p->n_stacks; k++)
			samples += p->stacks[k]->count;
		printf("%s{\"cgroup\":%" PRIu32 ",\"event\":", i ? "," : "", p->cgroup);
		str(m, p->event);
		printf(",\"stacks\":%zu,\"samples\":%" PRIu64, p->n_stacks, samples);
		if (p->truncated_stack_copy || p->truncated_max_stack ||
		    p->truncated_bad_return_address)
			printf(",\"truncated\":{\"stack_copy\":%" PRIu64 ",\"max_stack\":%" PRIu64
			       ",\"bad_return_address\":%" PRIu64 "}",
			       p->truncated_stack_copy, p->truncated_max_stack,
			       p->truncated_bad_return_address);
		fputs(",\"folded\":[", stdout);
		for (size_t k = 0; k < p->n_stacks; k++) {
			const Cgperf__V1__Stack *s = p->stacks[k];
			char *line = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&line, &len);

			if (!f)
				continue;
			for (size_t j = 0; j < s->n_frames; j++)
				fprintf(f, "%s%s", j ? ";" : "", wire_string(m, s->frames[j]));
			fprintf(f, " %" PRIu64, s->count);
			fclose(f);
			fputs(k ? "," : "", stdout);
			json_write_string(stdout, line);
			free(line);
		}
		fputs("],\"frame_modules\":[", stdout);
		for (size_t k = 0; k < p->n_stacks; k++) {
			const Cgperf__V1__Stack *s = p->stacks[k];

			fputs(k ? ",[" : "[", stdout);
			for (size_t j = 0; j < s->n_modules; j++)
				printf("%s%" PRIu32, j ? "," : "", s->modules[j]);
			putchar(']');
		}
		fputs("]}", stdout);
	}
	fputs("],\"modules\":[", stdout);
	for (size_t i = 0; i < m->n_modules; i++) {
		fputs(i ? ",{\"path\":" : "{\"path\":", stdout);
		str(m, m->modules[i]->path);
		fputs(",\"build_id\":", stdout);
		json_write_string(stdout, m->modules[i]->build_id);
		putchar('}');
	}
	fputs("],\"probes\":[", stdout);
	for (size_t i = 0; i < m->n_probes; i++) {
		const Cgperf__V1__Probe *p = m->probes[i];

		printf("%s{\"cgroup\":%" PRIu32 ",\"label\":", i ? "," : "", p->cgroup);
		str(m, p->label);
		printf(",\"hits\":%" PRIu64, p->hits);
		if (p->values)
			printf(",\"values\":{\"count\":%" PRIu64 ",\"sum\":%" PRIu64 "}",
			       p->values->count, p->values->sum);
		if (p->latency_ns)
			printf(",\"latency_ns\":{\"count\":%" PRIu64 ",\"sum\":%" PRIu64
			       ",\"max\":%" PRIu64 "}",
			       p->latency_ns->count, p->latency_ns->sum, p->latency_ns->max);
		putchar('}');
	}
	fputs("]", stdout);
	if (m->self)
		printf(",\"self\":{\"samples\":%" PRIu64 ",\"lost_samples\":%" PRIu64
		       ",\"push_failures\":%" PRIu64 ",\"spool_batches\":%" PRIu64 "}",
		       m->self->samples, m->self->lost_samples, m->self->push_failures,
		       m->self->spool_batches);
	fputs("}\n", stdout);
}

int cmd_wiredump(int argc, char **argv)
{
	int ret = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: cgperf-agent wire-dump FILE...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char *buf = NULL, err[512];
		size_t len = 0;
		Cgperf__V1__Batch *m;
		/* One byte over the cap, so that wire_decode() names it. */
		int r = slurp_at(AT_FDCWD, argv[i], WIRE_BODY_MAX_DEFAULT + 1, &buf, &len, NULL);

		if (r < 0) {
			fprintf(stderr, "wire-dump: %s: %s\n", argv[i], strerror(-r));
			ret = 1;
			continue;
		}
		m = wire_decode((const uint8_t *)buf, len, WIRE_BODY_MAX_DEFAULT, err, sizeof(err));
		free(buf);
		if (!m) {
			fprintf(stderr, "wire-dump: %s: %s\n", argv[i], err);
			ret = 1;
			continue;
		}
		dump(m);
		wire_batch_decoded_free(m);
	}
	return ret;
}
