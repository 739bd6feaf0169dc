// SPDX-License-Identifier: MIT
/*
 * The wire's exporter side: decoding a push body and checking every
 * reference and integer in it (the design note is at the head of wire.c).
 */
#include "wire/wire.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/utf8.h"

/* ---- decoding ---- */

__attribute__((format(printf, 4, 5))) static int say(char *err, size_t errlen, int code,
						     const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -code;
}

/*
 * protobuf-c allocations, counted against a budget. Each block carries its
 * size in a header so frees give the budget back (the parser's scratch
 * space comes and goes while it runs). Freeing needs no budget (@data NULL).
 */
#define BUDGET_HDR _Alignof(max_align_t)

struct budget {
	size_t left;
	bool over, oom;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *bg = data;
	unsigned char *p;

	if (bg && size > bg->left) {
		bg->over = true;
		return NULL;
	}
	if (size > SIZE_MAX - BUDGET_HDR)
		return NULL;
	p = malloc(BUDGET_HDR + size);
	if (!p) {
		if (bg)
			bg->oom = true;
		return NULL;
	}
	memcpy(p, &size, sizeof(size));
	if (bg)
		bg->left -= size;
	return p + BUDGET_HDR;
}

static void budget_free(void *data, void *ptr)
{
	struct budget *bg = data;
	unsigned char *p;
	size_t size;

	if (!ptr)
		return;
	p = (unsigned char *)ptr - BUDGET_HDR;
	memcpy(&size, p, sizeof(size));
	if (bg)
		bg->left += size;
	free(p);
}

static int gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen,
		  char *err, size_t errlen)
{
	size_t limit = max + 1, cap, have = 0, n = 0, in_left = len, chunk;
	uint8_t *buf = NULL;
	z_stream z;
	void *nv;
	int zret, ret;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return say(err, errlen, ENOMEM, "gzip: cannot set up zlib");
	cap = len < limit / 4 ? len * 4 : limit;
	if (cap < 4096)
		cap = limit < 4096 ? limit : 4096;
	for (;;) {
		if (n == cap) {
			/* Room for one byte past the cap tells "over" from "exactly". */
			if (cap == limit) {
				ret = say(err, errlen, EMSGSIZE,
					  "gzip: decompressed body exceeds the %zu byte cap", max);
				goto out;
			}
			cap = cap > limit / 2 ? limit : cap * 2;
		}
		if (have != cap) {
			nv = realloc(buf, cap);
			if (!nv) {
				ret = say(err, errlen, ENOMEM, "gzip: out of memory (%zu bytes)", cap);
				goto out;
			}
			buf = nv;
			have = cap;
		}
		if (!z.avail_in && in_left) {
			chunk = in_left > UINT_MAX ? UINT_MAX : in_left;
			z.next_in = (Bytef *)(in + (len - in_left));
			z.avail_in = (uInt)chunk;
			in_left -= chunk;
		}
		chunk = cap - n > UINT_MAX ? UINT_MAX : cap - n;
		z.next_out = buf + n;
		z.avail_out = (uInt)chunk;
		zret = inflate(&z, Z_NO_FLUSH);
		n += chunk - z.avail_out;
		if (zret == Z_STREAM_END)
			break;
		if (zret == Z_MEM_ERROR) {
			ret = say(err, errlen, ENOMEM, "gzip: out of memory");
			goto out;
		}
		if (zret != Z_OK && zret != Z_BUF_ERROR) {
			ret = say(err, errlen, EBADMSG, "gzip: corrupt stream (%s)",
				  z.msg ? z.msg : "bad data");
			goto out;
		}
		if (!z.avail_in && !in_left && z.avail_out) {
			ret = say(err, errlen, EBADMSG, "gzip: truncated stream (%zu bytes in)", len);
			goto out;
		}
	}
	if (n > max) {
		ret = say(err, errlen, EMSGSIZE, "gzip: decompressed body exceeds the %zu byte cap",
			  max);
		goto out;
	}
	if (z.avail_in || in_left) {
		ret = say(err, errlen, EBADMSG, "gzip: %zu bytes after the end of the stream",
			  (size_t)z.avail_in + in_left);
		goto out;
	}
	*out = buf;
	*outlen = n;
	buf = NULL;
	ret = 0;
out:
	inflateEnd(&z);
	free(buf);
	return ret;
}

struct vctx {
	const Cgperf__V1__Batch *m;
	char *err;
	size_t errlen;
};

#define VBAD(v, ...) say((v)->err, (v)->errlen, EBADMSG, __VA_ARGS__)

static int check_value(const struct vctx *v, const char *what, size_t i, const char *field,
		       uint64_t x)
{
	if (x <= WIRE_VALUE_MAX)
		return 0;
	return VBAD(v, "%s[%zu]: %s %" PRIu64 " above 2^63-1", what, i, field, x);
}

/* An integer field of a message, named as in the .proto. */
struct named_value {
	const char *name;
	uint64_t x;
};

/* check_value() on each of the @n fields @vals of @what[@i]. */
static int check_values(const struct vctx *v, const char *what, size_t i,
			const struct named_value *vals, size_t n)
{
	int ret = 0;

	for (size_t k = 0; k < n && ret == 0; k++)
		ret = check_value(v, what, i, vals[k].name, vals[k].x);
	return ret;
}

/* @id is a string id; @name: it must name something (not ""). */
static int check_sid(const struct vctx *v, const char *what, size_t i, const char *field,
		     uint32_t id, bool name)
{
	if (id && id >= v->m->n_strings)
		return VBAD(v, "%s[%zu]: %s: string id %" PRIu32 " out of range (%zu strings)",
			    what, i, field, id, v->m->n_strings);
	if (name && (!id || !v->m->strings[id][0]))
		return VBAD(v, "%s[%zu]: %s: empty name (string id %" PRIu32 ")", what, i, field,
			    id);
	return 0;
}

static int check_cg(const struct vctx *v, const char *what, size_t i, uint32_t cg)
{
	if (cg < v->m->n_cgroups)
		return 0;
	return VBAD(v, "%s[%zu]: cgroup %" PRIu32 " out of range (%zu cgroups)", what, i, cg,
		    v->m->n_cgroups);
}

/* What each counter, profile and probe has: its cgroup, and a name (the
 * string id @id in the field @field). */
static int check_owned(const struct vctx *v, const char *what, size_t i, uint32_t cg,
		       const char *field, uint32_t id)
{
	int ret = check_cg(v, what, i, cg);

	return ret < 0 ? ret : check_sid(v, what, i, field, id, true);
}

/* @s, named @what (or "@what[@i]" unless @i is SIZE_MAX): at most @max
 * bytes of valid UTF-8. */
static int check_text(const struct vctx *v, const char *what, size_t i, const char *s,
		      size_t max)
{
	size_t len = strnlen(s, max + 1), ok = 0;
	char at[32];

	if (len <= max && (ok = utf8_valid(s, len)) == len)
		return 0;
	at[0] = '\0';
	if (i != SIZE_MAX)
		snprintf(at, sizeof(at), "[%zu]", i);
	if (len > max)
		return VBAD(v, "%s%s: longer than %zu bytes", what, at, max);
	return VBAD(v, "%s%s: not valid UTF-8 at byte %zu", what, at, ok);
}

static int check_header(const struct vctx *v, const char *field, const char *s)
{
	return check_text(v, field, SIZE_MAX, s, WIRE_HEADER_MAX);
}

static int check_strings(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;

	if (m->n_strings && m->strings[0][0])
		return VBAD(v, "strings[0]: must be the empty string");
	for (size_t i = 0; i < m->n_strings; i++) {
		int ret = check_text(v, "strings", i, m->strings[i], WIRE_STRING_MAX);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A field of a message struct, named as in the .proto, for tables of fields
 * that are checked alike. */
struct msg_field {
	const char *name;
	size_t off;
};
#define MSG_FIELD(type, f) { #f, offsetof(type, f) }
#define CG_FIELD(f) MSG_FIELD(Cgperf__V1__Cgroup, f)
#define SELF_FIELD(f) MSG_FIELD(Cgperf__V1__AgentStats, f)

static int check_cgroups(const struct vctx *v)
{
	/* the optional string fields */
	static const struct msg_field fields[] = {
		CG_FIELD(container_id), CG_FIELD(runtime), CG_FIELD(pod_uid),
		CG_FIELD(qos), CG_FIELD(k8s_namespace), CG_FIELD(pod_name),
		CG_FIELD(container_name), CG_FIELD(unit), CG_FIELD(slice),
		CG_FIELD(image), CG_FIELD(description)
	};
	int ret;

	for (size_t i = 0; i < v->m->n_cgroups; i++) {
		const Cgperf__V1__Cgroup *c = v->m->cgroups[i];

		if ((ret = check_sid(v, "cgroups", i, "path", c->path, true)) < 0 ||
		    (ret = check_value(v, "cgroups", i, "id", c->id)) < 0)
			return ret;
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
			uint32_t id;

			memcpy(&id, (const char *)c + fields[f].off, sizeof(id));
			ret = check_sid(v, "cgroups", i, fields[f].name, id, false);
			if (ret < 0)
				return ret;
		}
		if (c->n_labels > WIRE_LABELS_MAX)
			return VBAD(v, "cgroups[%zu]: %zu labels, at most %d", i, c->n_labels,
				    WIRE_LABELS_MAX);
		for (size_t l = 0; l < c->n_labels; l++)
			if ((ret = check_sid(v, "cgroups", i, "labels.key", c->labels[l]->key,
					     true)) < 0 ||
			    (ret = check_sid(v, "cgroups", i, "labels.value", c->labels[l]->value,
					     false)) < 0)
				return ret;
	}
	return 0;
}

static int check_counters(const struct vctx *v)
{
	int ret;

	for (size_t i = 0; i < v->m->n_counters; i++) {
		const Cgperf__V1__Counter *c = v->m->counters[i];
		const struct named_value vals[] = {
			{ "value", c->value },
			{ "time_enabled", c->time_enabled },
			{ "time_running", c->time_running },
		};

		if ((ret = check_owned(v, "counters", i, c->cgroup, "event", c->event)) < 0 ||
		    (ret = check_values(v, "counters", i, vals, sizeof(vals) / sizeof(vals[0]))) < 0)
			return ret;
		if (c->time_running > c->time_enabled)
			return VBAD(v,
				    "counters[%zu]: time_running %" PRIu64
				    " exceeds time_enabled %" PRIu64,
				    i, c->time_running, c->time_enabled);
	}
	return 0;
}

static int check_profiles(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	for (size_t i = 0; i < m->n_profiles; i++) {
		const Cgperf__V1__Profile *p = m->profiles[i];
		const struct named_value vals[] = {
			{ "period", p->period },
			{ "frequency", p->frequency },
			{ "truncated_stack_copy", p->truncated_stack_copy },
			{ "truncated_max_stack", p->truncated_max_stack },
			{ "truncated_bad_return_address", p->truncated_bad_return_address },
		};
		uint64_t total = 0;

		if ((ret = check_owned(v, "profiles", i, p->cgroup, "event", p->event)) < 0 ||
		    (ret = check_values(v, "profiles", i, vals, sizeof(vals) / sizeof(vals[0]))) < 0)
			return ret;
		for (size_t k = 0; k < p->n_stacks; k++) {
			const Cgperf__V1__Stack *s = p->stacks[k];

			if (!s->n_frames || s->n_frames > WIRE_STACK_MAX)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: %zu frames (1..%d allowed)",
					    i, k, s->n_frames, WIRE_STACK_MAX);
			for (size_t f = 0; f < s->n_frames; f++) {
				uint32_t id = s->frames[f];

				if (id >= m->n_strings && id)
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].frames[%zu]: string id "
						    "%" PRIu32 " out of range (%zu strings)",
						    i, k, f, id, m->n_strings);
				if (!id || !m->strings[id][0])
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].frames[%zu]: empty name "
						    "(string id %" PRIu32 ")",
						    i, k, f, id);
			}
			if (s->n_modules && s->n_modules != s->n_frames)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: %zu modules for %zu frames "
					    "(none or one per frame)",
					    i, k, s->n_modules, s->n_frames);
			for (size_t f = 0; f < s->n_modules; f++)
				if (s->modules[f] > m->n_modules)
					return VBAD(v,
						    "profiles[%zu].stacks[%zu].modules[%zu]: module "
						    "%" PRIu32 " out of range (%zu modules)",
						    i, k, f, s->modules[f], m->n_modules);
			if (s->count > WIRE_VALUE_MAX - total)
				return VBAD(v,
					    "profiles[%zu].stacks[%zu]: count %" PRIu64
					    " takes the profile's total past 2^63-1",
					    i, k, s->count);
			total += s->count;
		}
	}
	return 0;
}

static int check_modules(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	if (m->n_modules > WIRE_MODULES_MAX)
		return VBAD(v, "modules: %zu modules (at most %d)", m->n_modules, WIRE_MODULES_MAX);
	for (size_t i = 0; i < m->n_modules; i++) {
		const Cgperf__V1__Module *d = m->modules[i];
		const char *h = d->build_id;
		size_t n = strnlen(h, WIRE_BUILD_ID_MAX + 1);

		if ((ret = check_sid(v, "modules", i, "path", d->path, true)) < 0)
			return ret;
		if (n > WIRE_BUILD_ID_MAX)
			return VBAD(v, "modules[%zu]: build_id longer than %d hex digits", i,
				    WIRE_BUILD_ID_MAX);
		if (n % 2)
			return VBAD(v, "modules[%zu]: build_id of %zu hex digits (whole bytes only)",
				    i, n);
		for (size_t k = 0; k < n; k++)
			if (!((h[k] >= '0' && h[k] <= '9') || (h[k] >= 'a' && h[k] <= 'f')))
				return VBAD(v,
					    "modules[%zu]: build_id: not lowercase hex at byte %zu", i,
					    k);
	}
	return 0;
}

static int check_hist(const struct vctx *v, size_t i, const char *field,
		      const Cgperf__V1__Histogram *h)
{
	const struct named_value values[] = {
		{ "count", h->count }, { "sum", h->sum },	      { "min", h->min },
		{ "max", h->max },     { "negative", h->negative },
	};
	uint64_t n = h->negative;

	if (h->offset > HIST_BUCKETS || h->n_buckets > HIST_BUCKETS - h->offset)
		return VBAD(v, "probes[%zu].%s: buckets %" PRIu32 "+%zu past bucket %d", i, field,
			    h->offset, h->n_buckets, HIST_BUCKETS - 1);
	for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++)
		if (values[k].x > WIRE_VALUE_MAX)
			return VBAD(v, "probes[%zu].%s: %s %" PRIu64 " above 2^63-1", i, field,
				    values[k].name, values[k].x);
	for (size_t k = 0; k < h->n_buckets; k++) {
		if (h->buckets[k] > WIRE_VALUE_MAX - n)
			return VBAD(v, "probes[%zu].%s: bucket counts overflow", i, field);
		n += h->buckets[k];
	}
	if (n != h->count)
		return VBAD(v,
			    "probes[%zu].%s: count %" PRIu64 " is not negative + buckets (%" PRIu64
			    ")",
			    i, field, h->count, n);
	if (h->min > h->max)
		return VBAD(v, "probes[%zu].%s: min %" PRIu64 " above max %" PRIu64, i, field,
			    h->min, h->max);
	return 0;
}

static int check_probes(const struct vctx *v)
{
	int ret;

	for (size_t i = 0; i < v->m->n_probes; i++) {
		const Cgperf__V1__Probe *p = v->m->probes[i];

		if ((ret = check_owned(v, "probes", i, p->cgroup, "label", p->label)) < 0 ||
		    (ret = check_value(v, "probes", i, "hits", p->hits)) < 0)
			return ret;
		if (p->values && (ret = check_hist(v, i, "values", p->values)) < 0)
			return ret;
		if (p->latency_ns && (ret = check_hist(v, i, "latency_ns", p->latency_ns)) < 0)
			return ret;
	}
	return 0;
}

static int check_self(const struct vctx *v)
{
	static const struct msg_field fields[] = {
		SELF_FIELD(samples), SELF_FIELD(lost_samples), SELF_FIELD(unwind_failures),
		SELF_FIELD(push_failures), SELF_FIELD(spool_bytes), SELF_FIELD(spool_dropped_batches),
		SELF_FIELD(spool_batches), SELF_FIELD(push_rejected), SELF_FIELD(stacks_refused)
	};
	const Cgperf__V1__AgentStats *s = v->m->self;

	if (!s)
		return VBAD(v, "self: the agent's figures are missing (truncated body?)");
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++) {
		uint64_t x;

		memcpy(&x, (const char *)s + fields[f].off, sizeof(x));
		if (x > WIRE_VALUE_MAX)
			return VBAD(v, "self: %s %" PRIu64 " above 2^63-1", fields[f].name, x);
	}
	return 0;
}

/*
 * protobuf-c takes an overlong varint tag of 0 ("80 00") as an unknown
 * field numbered 0, which it then writes back as "00" and refuses to read.
 * Field number 0 is invalid protobuf: refuse it wherever it hides.
 */
static int check_tags(const struct vctx *v, const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	int ret;

	for (unsigned i = 0; i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return VBAD(v, "%s: field number 0 (malformed protobuf)", d->short_name);
	for (unsigned f = 0; f < d->n_fields; f++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[f];
		const char *base = (const char *)msg;
		ProtobufCMessage **subs, *sub;
		size_t n;

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			memcpy(&n, base + fd->quantifier_offset, sizeof(n));
			memcpy(&subs, base + fd->offset, sizeof(subs));
			for (size_t k = 0; k < n; k++)
				if ((ret = check_tags(v, subs[k])) < 0)
					return ret;
		} else {
			memcpy(&sub, base + fd->offset, sizeof(sub));
			if (sub && (ret = check_tags(v, sub)) < 0)
				return ret;
		}
	}
	return 0;
}

static int validate(const struct vctx *v)
{
	const Cgperf__V1__Batch *m = v->m;
	int ret;

	if (m->schema_version != WIRE_SCHEMA_VERSION)
		return m->schema_version
			       ? VBAD(v, "schema_version %" PRIu32 " not supported (this reader: %d)",
				      m->schema_version, WIRE_SCHEMA_VERSION)
			       : VBAD(v, "schema_version missing");
	if ((ret = check_tags(v, &m->base)) < 0 ||
	    (ret = check_header(v, "host", m->host)) < 0 ||
	    (ret = check_header(v, "machine_id", m->machine_id)) < 0 ||
	    (ret = check_header(v, "agent_id", m->agent_id)) < 0 ||
	    (ret = check_header(v, "agent_version", m->agent_version)) < 0)
		return ret;
	if (!m->agent_id[0])
		return VBAD(v, "agent_id missing");
	if (m->seq > WIRE_VALUE_MAX || m->end_ns > WIRE_VALUE_MAX)
		return VBAD(v, "seq %" PRIu64 " or end_ns %" PRIu64 " above 2^63-1", m->seq,
			    m->end_ns);
	if (m->start_ns > m->end_ns)
		return VBAD(v, "interval ends before it starts (start_ns %" PRIu64 " > end_ns %" PRIu64
			    ")",
			    m->start_ns, m->end_ns);
	if ((ret = check_self(v)) < 0 || (ret = check_strings(v)) < 0 ||
	    (ret = check_cgroups(v)) < 0 || (ret = check_counters(v)) < 0 ||
	    (ret = check_modules(v)) < 0 || (ret = check_profiles(v)) < 0 ||
	    (ret = check_probes(v)) < 0)
		return ret;
	return 0;
}

Cgperf__V1__Batch *wire_decode(const uint8_t *buf, size_t len, size_t max_len, char *err,
			       size_t errlen)
{
	struct budget bg = { 0 };
	ProtobufCAllocator alloc = { .alloc = budget_alloc, .free = budget_free, .allocator_data = &bg };
	ProtobufCAllocator plain = { .alloc = budget_alloc, .free = budget_free };
	const uint8_t *p = buf;
	uint8_t *unzipped = NULL;
	Cgperf__V1__Batch *m;
	struct vctx v = { .err = err, .errlen = errlen };
	size_t plen = len;
	int ret;

	if (errlen)
		err[0] = '\0';
	if (!max_len)
		max_len = WIRE_BODY_MAX_DEFAULT;
	if (!buf && len) {
		ret = say(err, errlen, EINVAL, "no buffer");
		goto fail;
	}
	if (len > max_len) {
		ret = say(err, errlen, EMSGSIZE, "body of %zu bytes exceeds the %zu byte cap", len,
			  max_len);
		goto fail;
	}
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		ret = gunzip(buf, len, max_len, &unzipped, &plen, err, errlen);
		if (ret < 0)
			goto fail;
		p = unzipped;
	}
	if (!plen) {
		ret = say(err, errlen, EBADMSG, "empty body");
		goto fail;
	}
	bg.left = plen > (SIZE_MAX - (1u << 20)) / 32 ? SIZE_MAX : plen * 32 + (1u << 20);
	m = cgperf__v1__batch__unpack(&alloc, plen, p);
	free(unzipped);
	unzipped = NULL;
	if (!m) {
		if (bg.over)
			ret = say(err, errlen, EMSGSIZE,
				  "decoding %zu protobuf bytes needs more memory than the budget "
				  "(32 bytes per byte + 1 MiB)",
				  plen);
		else if (bg.oom)
			ret = say(err, errlen, ENOMEM, "out of memory decoding %zu bytes", plen);
		else
			ret = say(err, errlen, EBADMSG,
				  "not a protobuf Batch (malformed or truncated, %zu bytes)", plen);
		goto fail;
	}
	v.m = m;
	ret = validate(&v);
	if (ret < 0) {
		protobuf_c_message_free_unpacked(&m->base, &plain);
		goto fail;
	}
	return m;
fail:
	free(unzipped);
	errno = -ret;
	return NULL;
}

void wire_batch_decoded_free(Cgperf__V1__Batch *m)
{
	ProtobufCAllocator plain = { .alloc = budget_alloc, .free = budget_free };

	if (m)
		protobuf_c_message_free_unpacked(&m->base, &plain);
}

const char *wire_string(const Cgperf__V1__Batch *m, uint32_t id)
{
	if (!m || id >= m->n_strings)
		return "";
	return m->strings[id];
}

void wire_hist(const Cgperf__V1__Histogram *m, struct hist *h)
{
	memset(h, 0, sizeof(*h));
	if (!m)
		return;
	h->count = m->count;
	h->negative = m->negative;
	h->sum = m->sum;
	h->min = m->min;
	h->max = m->max;
	/* offset + n_buckets <= HIST_BUCKETS for a batch wire_decode passed. */
	for (size_t i = 0; i < m->n_buckets && m->offset + i < HIST_BUCKETS; i++)
		h->b[m->offset + i] = m->buckets[i];
}
