// SPDX-License-Identifier: MIT
/*
 * Reading a workload's identity off its cgroup path.
 *
 * Runtimes and managers encode who they are in the names of the cgroups they
 * create, one path component at a time, so the path is walked left to right
 * and each component is judged on its own shape and on what the previous
 * component said (a bare 64-hex name only means "docker container" right
 * after a "docker" component). Nested workloads (docker-in-docker, k3s in a
 * container, systemd inside a container) are common, so a later match
 * replaces an earlier one: the innermost component that names a container,
 * a unit or a slice is the one reported.
 *
 * The shapes, as the runtimes create them:
 *
 *   docker (cgroupfs)       /docker/<64hex>
 *   systemd drivers         .../docker-<hex>.scope, .../cri-containerd-<hex>.scope,
 *                           .../crio-<hex>.scope, .../libpod-<hex>.scope
 *   conmon monitors         .../crio-conmon-<hex>.scope, .../libpod-conmon-<hex>.scope
 *   podman (cgroupfs)       /libpod_parent/libpod-<hex>
 *   kubepods (systemd)      .../[prefix-]kubepods[-<qos>]-pod<uid with '_'>.slice
 *   kubepods (cgroupfs)     /kubepods[/<qos>]/pod<uid>/<64hex | crio-<hex> | ...>
 *   LXC                     /lxc/<name>, /lxc.payload/<name> (3.x), /lxc.payload.<name>
 *   LXC monitors            /lxc.monitor/<name>, /lxc.monitor.<name>
 *   systemd-nspawn          /machine.slice/systemd-nspawn@<name>.service
 *
 * Container ids are accepted only as lowercase hex: every runtime prints them
 * that way, and refusing anything else keeps ordinary names ("docker-compose
 * .scope") from passing as ids. The conmon forms need no special case, since
 * "conmon-<hex>" is not hex. A bare hex leaf is only believed at its full 64
 * digits, where an accidental match is implausible.
 *
 * Pod UIDs are canonical UUIDs, except for static pods, whose UID the kubelet
 * derives from an MD5 of the manifest: 32 hex digits without dashes. Both are
 * accepted; anything else leaves the pod unknown rather than half-known.
 *
 * A kernfs name is at most 255 bytes, so a longer component cannot come from
 * a real hierarchy; such components are ignored rather than truncated, since
 * a truncated unit or container name would name something else. The strings
 * copied into struct cg_identity are otherwise verbatim (quotes, newlines,
 * UTF-8 and all): escaping them is the job of whoever prints them.
 */

#include "cgroup/identity.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CG_ID_MIN 12 /* the short form docker and crictl print */

/* One path component; not NUL-terminated. */
struct comp {
	const char *s;
	size_t len;
};

/* What the previous component makes of the next one. */
enum parse_ctx {
	CTX_NONE,
	CTX_DOCKER,	   /* after "docker": a 64-hex container id */
	CTX_LXC,	   /* after "lxc" or "lxc.payload": a container name */
	CTX_LIBPOD_PARENT, /* after "libpod_parent": libpod-<id> without .scope */
	CTX_KUBEPODS,	   /* after "kubepods": a QoS class or a pod */
	CTX_KUBE_QOS,	   /* after "kubepods/<qos>": a pod */
	CTX_KUBE_POD,	   /* after "pod<uid>": a container leaf */
};

struct parse_state {
	enum parse_ctx ctx;
	enum cg_qos qos; /* QoS component seen under cgroupfs "kubepods" */
};

static bool comp_eq(const struct comp *c, const char *lit)
{
	size_t n = strlen(lit);

	return c->len == n && memcmp(c->s, lit, n) == 0;
}

static bool comp_has_prefix(const struct comp *c, const char *prefix)
{
	size_t n = strlen(prefix);

	return c->len >= n && memcmp(c->s, prefix, n) == 0;
}

static bool comp_has_suffix(const struct comp *c, const char *suffix)
{
	size_t n = strlen(suffix);

	return c->len >= n && memcmp(c->s + c->len - n, suffix, n) == 0;
}

static bool is_lower_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

static bool all_lower_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static bool is_container_id(const char *s, size_t len)
{
	return len >= CG_ID_MIN && len <= CG_CONTAINER_ID_MAX && all_lower_hex(s, len);
}

static bool is_full_container_id(const struct comp *c)
{
	return c->len == CG_CONTAINER_ID_MAX && all_lower_hex(c->s, c->len);
}

/* Callers check @len against @cap; the clamp is only a backstop. */
static void copy_field(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void clear_container(struct cg_identity *id)
{
	id->runtime = CG_RT_NONE;
	id->container_id[0] = '\0';
	id->container_name[0] = '\0';
}

static void set_container_id(struct cg_identity *id, enum cg_runtime rt, const char *hex,
			     size_t len)
{
	clear_container(id);
	id->runtime = rt;
	copy_field(id->container_id, sizeof(id->container_id), hex, len);
}

static bool set_container_name(struct cg_identity *id, enum cg_runtime rt, const char *name,
			       size_t len)
{
	if (len == 0 || len >= sizeof(id->container_name))
		return false;
	clear_container(id);
	id->runtime = rt;
	copy_field(id->container_name, sizeof(id->container_name), name, len);
	return true;
}

/*
 * "<runtime>-<hex>" with an optional ".scope"; @need_scope for the systemd
 * drivers, where a component without the suffix is something else.
 */
static bool parse_runtime_scope(struct cg_identity *id, const struct comp *c, bool need_scope)
{
	static const struct {
		const char *prefix;
		enum cg_runtime rt;
	} forms[] = {
		{ "docker-", CG_RT_DOCKER },
		{ "cri-containerd-", CG_RT_CONTAINERD },
		{ "crio-", CG_RT_CRIO },
		{ "libpod-", CG_RT_PODMAN },
	};
	struct comp body = *c;

	if (comp_has_suffix(&body, ".scope"))
		body.len -= strlen(".scope");
	else if (need_scope)
		return false;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t plen = strlen(forms[i].prefix);

		if (!comp_has_prefix(&body, forms[i].prefix))
			continue;
		if (!is_container_id(body.s + plen, body.len - plen))
			return false;
		set_container_id(id, forms[i].rt, body.s + plen, body.len - plen);
		return true;
	}
	return false;
}

/*
 * Validate @len bytes at @s as a pod UID, with '_' standing for '-' as the
 * systemd driver writes it, and store the dashed form in @out.
 */
static bool parse_pod_uid(const char *s, size_t len, char out[CG_POD_UID_MAX + 1])
{
	char uid[CG_POD_UID_MAX + 1];

	if (len == 32) {
		/* static pod: MD5 of the manifest, as the kubelet names it */
		if (!all_lower_hex(s, len))
			return false;
		copy_field(out, CG_POD_UID_MAX + 1, s, len);
		return true;
	}
	if (len != CG_POD_UID_MAX)
		return false;

	for (size_t i = 0; i < len; i++) {
		bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;
		char ch = s[i] == '_' ? '-' : s[i];

		if (dash_pos ? ch != '-' : !is_lower_hex(ch))
			return false;
		uid[i] = ch;
	}
	uid[len] = '\0';
	memcpy(out, uid, sizeof(uid));
	return true;
}

static void set_pod(struct cg_identity *id, const char *uid, enum cg_qos qos)
{
	/* a container seen further out holds the node, not this pod */
	clear_container(id);
	copy_field(id->pod_uid, sizeof(id->pod_uid), uid, strlen(uid));
	id->qos = qos;
}

static enum cg_qos qos_from(const char *s, size_t len)
{
	if (len == strlen("burstable") && memcmp(s, "burstable", len) == 0)
		return CG_QOS_BURSTABLE;
	if (len == strlen("besteffort") && memcmp(s, "besteffort", len) == 0)
		return CG_QOS_BESTEFFORT;
	return CG_QOS_NONE;
}

/* Does @s[0..len) end with the dash-separated word "kubepods"? */
static bool ends_with_kubepods(const char *s, size_t len)
{
	size_t n = strlen("kubepods");

	if (len < n || memcmp(s + len - n, "kubepods", n) != 0)
		return false;
	return len == n || s[len - n - 1] == '-';
}

/*
 * The systemd driver's pod slice: "[<prefix>-]kubepods[-<qos>]-pod<uid>.slice".
 * In slice names '-' marks nesting, so the QoS is the word between
 * "kubepods" and "pod<uid>", and its absence means guaranteed.
 */
static void parse_kube_slice(struct cg_identity *id, const struct comp *c)
{
	char uid[CG_POD_UID_MAX + 1];
	size_t len = c->len - strlen(".slice");
	const char *s = c->s;
	const char *dash = memrchr(s, '-', len);
	const char *pod;
	size_t pod_len, head;
	enum cg_qos qos = CG_QOS_GUARANTEED;

	if (!dash)
		return;
	pod = dash + 1;
	pod_len = (size_t)(s + len - pod);
	if (pod_len < 3 || memcmp(pod, "pod", 3) != 0 || !parse_pod_uid(pod + 3, pod_len - 3, uid))
		return;

	head = (size_t)(dash - s);
	if (!ends_with_kubepods(s, head)) {
		const char *qdash = memrchr(s, '-', head);

		if (!qdash)
			return;
		qos = qos_from(qdash + 1, (size_t)(s + head - qdash - 1));
		if (qos == CG_QOS_NONE || !ends_with_kubepods(s, (size_t)(qdash - s)))
			return;
	}
	set_pod(id, uid, qos);
}

static void parse_systemd(struct cg_identity *id, const struct comp *c)
{
	static const char *const unit_suffixes[] = {
		".service", ".scope", ".socket", ".mount", ".swap",
	};

	/* systemd refuses longer names, and a bare suffix names nothing */
	if (c->len > CG_UNIT_MAX || c->s[0] == '.')
		return;

	if (comp_has_suffix(c, ".slice")) {
		copy_field(id->slice, sizeof(id->slice), c->s, c->len);
		parse_kube_slice(id, c);
		return;
	}
	for (size_t i = 0; i < sizeof(unit_suffixes) / sizeof(unit_suffixes[0]); i++) {
		if (comp_has_suffix(c, unit_suffixes[i])) {
			copy_field(id->unit, sizeof(id->unit), c->s, c->len);
			return;
		}
	}
}

/* Components whose meaning comes from the one before; true if consumed. */
static bool parse_in_context(struct cg_identity *id, struct parse_state *st,
			     const struct comp *c)
{
	char uid[CG_POD_UID_MAX + 1];

	switch (st->ctx) {
	case CTX_DOCKER:
		if (!is_full_container_id(c))
			return false;
		set_container_id(id, CG_RT_DOCKER, c->s, c->len);
		st->ctx = CTX_NONE;
		return true;
	case CTX_LXC:
		st->ctx = CTX_NONE;
		return set_container_name(id, CG_RT_LXC, c->s, c->len);
	case CTX_LIBPOD_PARENT:
		st->ctx = CTX_NONE;
		return parse_runtime_scope(id, c, false);
	case CTX_KUBEPODS:
		st->qos = qos_from(c->s, c->len);
		if (st->qos != CG_QOS_NONE) {
			st->ctx = CTX_KUBE_QOS;
			return true;
		}
		/* no QoS level: a guaranteed pod directly under kubepods */
		st->qos = CG_QOS_GUARANTEED;
		/* fall through */
	case CTX_KUBE_QOS:
		if (!comp_has_prefix(c, "pod")) {
			st->ctx = CTX_NONE;
			return false;
		}
		/* an invalid UID still leaves a pod-shaped parent for the leaf */
		if (parse_pod_uid(c->s + 3, c->len - 3, uid))
			set_pod(id, uid, st->qos);
		st->ctx = CTX_KUBE_POD;
		return true;
	case CTX_KUBE_POD:
		st->ctx = CTX_NONE;
		if (is_full_container_id(c)) {
			/* cgroupfs driver names the leaf by id alone: CRI's default */
			set_container_id(id, CG_RT_CONTAINERD, c->s, c->len);
			return true;
		}
		return parse_runtime_scope(id, c, false);
	case CTX_NONE:
		break;
	}
	return false;
}

static void parse_component(struct cg_identity *id, struct parse_state *st, const struct comp *c)
{
	parse_systemd(id, c);

	if (parse_in_context(id, st, c))
		return;
	st->ctx = CTX_NONE;

	if (parse_runtime_scope(id, c, true))
		return;

	if (comp_has_prefix(c, "systemd-nspawn@") && comp_has_suffix(c, ".service") &&
	    c->len <= CG_UNIT_MAX) {
		size_t plen = strlen("systemd-nspawn@");
		size_t slen = strlen(".service");

		if (c->len > plen + slen)
			set_container_name(id, CG_RT_NSPAWN, c->s + plen, c->len - plen - slen);
		return;
	}
	if (comp_has_prefix(c, "lxc.payload.")) {
		size_t plen = strlen("lxc.payload.");

		set_container_name(id, CG_RT_LXC, c->s + plen, c->len - plen);
		return;
	}

	if (comp_eq(c, "docker"))
		st->ctx = CTX_DOCKER;
	else if (comp_eq(c, "lxc") || comp_eq(c, "lxc.payload"))
		st->ctx = CTX_LXC;
	else if (comp_eq(c, "libpod_parent"))
		st->ctx = CTX_LIBPOD_PARENT;
	else if (comp_eq(c, "kubepods"))
		st->ctx = CTX_KUBEPODS;
	/* "lxc.monitor", "lxc.monitor.<name>": LXC's own process, no container */
}

int cg_identity_parse(const char *path, struct cg_identity *out)
{
	struct parse_state st = { .ctx = CTX_NONE, .qos = CG_QOS_NONE };
	const char *p = path;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!path || !out)
		return -EINVAL;

	for (;;) {
		struct comp c;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		c.s = p;
		c.len = strcspn(p, "/");
		p += c.len;
		parse_component(out, &st, &c);
	}
	return 0;
}

/* Entry @i of the names table @names (@n entries), "" outside it. */
static const char *name_of(const char *const *names, size_t n, unsigned i)
{
	return i < n && names[i] ? names[i] : "";
}

const char *cg_runtime_name(enum cg_runtime rt)
{
	static const char *const names[] = {
		[CG_RT_NONE] = "", [CG_RT_DOCKER] = "docker", [CG_RT_CONTAINERD] = "containerd",
		[CG_RT_CRIO] = "cri-o", [CG_RT_PODMAN] = "podman", [CG_RT_LXC] = "lxc",
		[CG_RT_NSPAWN] = "nspawn",
	};

	return name_of(names, sizeof(names) / sizeof(names[0]), (unsigned)rt);
}

const char *cg_qos_name(enum cg_qos qos)
{
	static const char *const names[] = {
		[CG_QOS_NONE] = "", [CG_QOS_GUARANTEED] = "guaranteed",
		[CG_QOS_BURSTABLE] = "burstable", [CG_QOS_BESTEFFORT] = "besteffort",
	};

	return name_of(names, sizeof(names) / sizeof(names[0]), (unsigned)qos);
}

/*
 * Most specific first: pod and container together, then either alone, then
 * the unit, then the slice (a bare "user-1000.slice" still says whose it is).
 */
int cg_identity_label(const struct cg_identity *id, char *buf, size_t len)
{
	const char *rt, *ctr;
	int prec;

	if (!id || (!buf && len))
		return -EINVAL;

	rt = cg_runtime_name(id->runtime);
	if (id->container_id[0]) {
		ctr = id->container_id;
		prec = CG_ID_MIN;
	} else {
		ctr = id->container_name;
		prec = CG_UNIT_MAX;
	}

	if (id->pod_uid[0] && ctr[0])
		return snprintf(buf, len, "pod:%s %s:%.*s", id->pod_uid, rt, prec, ctr);
	if (id->pod_uid[0])
		return snprintf(buf, len, "pod:%s", id->pod_uid);
	if (ctr[0])
		return snprintf(buf, len, "%s:%.*s", rt, prec, ctr);
	return snprintf(buf, len, "%s", id->unit[0] ? id->unit : id->slice);
}
