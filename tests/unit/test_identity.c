// SPDX-License-Identifier: MIT
/*
 * cg_identity_parse() against cgroup paths as docker, containerd, CRI-O,
 * podman, LXC, systemd-nspawn, systemd and the kubelet create them, plus
 * the label, the name tables, over-long and hostile input.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup/identity.h"
#include "tests/unit/testlib.h"

#define ID1 "ab5996f44dc5a01bd743ec62ec54bda1419d305b5d0c4ddc1c42c24186c1f35d"
#define ID2 "91347366a5d82f6e5d69e4397e72641b2195cd0f3da19385cfafb726bf99fbf8"
#define ID3 "4eefbcdc8edcaa4fc83c6cbb20e9f89c15d4e9f2912bcd49e1583cf566815b26"
#define ID4 "d505106006e2043eb86ea1d71d8df9f1e941a12402e50fbc594596d69ed453c1"
#define ID5 "8fe8322aed15b9995574fbc9d06da7826f4975908ef2810a335788ee8102b8a6"
#define ID6 "cd0248617e29919e7a9901f97d179d1c5ac0d37f0981a8ed0dffb4f27420ac9d"
#define ID7 "d9652ea41861f5e47ed7381d13b333d577b34a10b0d5bb6eea011c175830c3ff"
#define ID8 "f60309815e58bb941d7a08f5618f6179e92d38471d9f92170d5eb0c2a2c0a4eb"

/* the same UIDs as the cgroupfs driver (dashes) and systemd driver ('_') write them */
#define UID1 "28317a2c-031f-4992-8e06-d708fab9fd1c"
#define UID1_ "28317a2c_031f_4992_8e06_d708fab9fd1c"
#define UID2 "8bdf24aa-e08d-4ca8-9c84-d63d6579d627"
#define UID2_ "8bdf24aa_e08d_4ca8_9c84_d63d6579d627"
#define UID3 "4738338b-2538-469a-88c7-11fa1c7cf24a"
#define UID3_ "4738338b_2538_469a_88c7_11fa1c7cf24a"
#define UID4 "73bb811c-7e1d-4a6a-a777-c609dd70b9ee"
#define STATIC_UID "6f1c2e3d4b5a69788796a5b4c3d2e1f0" /* kubelet's MD5 of a manifest */

#define KUBE_BU "/kubepods.slice/kubepods-burstable.slice/"
#define KUBE_BE "/kubepods.slice/kubepods-besteffort.slice/"
#define USER_MGR "/user.slice/user-1000.slice/user@1000.service"

struct id_case {
	const char *path;
	enum cg_runtime rt;
	const char *id; /* NULL stands for "" in every string field */
	const char *name;
	const char *pod;
	enum cg_qos qos;
	const char *unit;
	const char *slice;
	const char *label;
};

static const struct id_case cases[] = {
	/* empty identities */
	{ .path = "" },
	{ .path = "/" },
	{ .path = "///" },
	{ .path = "/foo/bar" },
	{ .path = "/init.scope", .unit = "init.scope", .label = "init.scope" },

	/* docker */
	{ .path = "/docker/" ID1, .rt = CG_RT_DOCKER, .id = ID1, .label = "docker:ab5996f44dc5" },
	{ .path = "/system.slice/docker-" ID2 ".scope", .rt = CG_RT_DOCKER, .id = ID2,
	  .unit = "docker-" ID2 ".scope", .slice = "system.slice", .label = "docker:91347366a5d8" },
	{ .path = "/system.slice/docker.service", .unit = "docker.service",
	  .slice = "system.slice", .label = "docker.service" },
	/* docker-in-docker: the inner container is the workload */
	{ .path = "/docker/" ID1 "/docker/" ID3, .rt = CG_RT_DOCKER, .id = ID3,
	  .label = "docker:4eefbcdc8edc" },
	{ .path = USER_MGR "/user.slice/docker-" ID2 ".scope", .rt = CG_RT_DOCKER, .id = ID2,
	  .unit = "docker-" ID2 ".scope", .slice = "user.slice", .label = "docker:91347366a5d8" },
	/* a systemd container in a docker scope keeps the container identity */
	{ .path = "/system.slice/docker-" ID2 ".scope/system.slice/nginx.service",
	  .rt = CG_RT_DOCKER, .id = ID2, .unit = "nginx.service", .slice = "system.slice",
	  .label = "docker:91347366a5d8" },
	/* short ids: fine in a runtime scope, too ambiguous as a bare leaf */
	{ .path = "/system.slice/docker-ab5996f44dc5.scope", .rt = CG_RT_DOCKER,
	  .id = "ab5996f44dc5", .unit = "docker-ab5996f44dc5.scope", .slice = "system.slice",
	  .label = "docker:ab5996f44dc5" },
	{ .path = "/docker/ab5996f44dc5" },
	{ .path = "/system.slice/docker-ab5996f44dc.scope", .unit = "docker-ab5996f44dc.scope",
	  .slice = "system.slice", .label = "docker-ab5996f44dc.scope" },
	{ .path = "/system.slice/docker-" ID1 "0.scope", .unit = "docker-" ID1 "0.scope",
	  .slice = "system.slice", .label = "docker-" ID1 "0.scope" },
	{ .path = "/system.slice/docker-compose.scope", .unit = "docker-compose.scope",
	  .slice = "system.slice", .label = "docker-compose.scope" },
	{ .path = "/docker/AB5996F44DC5A01BD743EC62EC54BDA1419D305B5D0C4DDC1C42C24186C1F35D" },
	{ .path = "/docker/zb5996f44dc5a01bd743ec62ec54bda1419d305b5d0c4ddc1c42c24186c1f35d" },

	/* containerd, CRI-O under the kubelet's systemd driver */
	{ .path = "/system.slice/containerd.service", .unit = "containerd.service",
	  .slice = "system.slice", .label = "containerd.service" },
	{ .path = KUBE_BU "kubepods-burstable-pod" UID1_ ".slice/cri-containerd-" ID3 ".scope",
	  .rt = CG_RT_CONTAINERD, .id = ID3, .pod = UID1, .qos = CG_QOS_BURSTABLE,
	  .unit = "cri-containerd-" ID3 ".scope", .slice = "kubepods-burstable-pod" UID1_ ".slice",
	  .label = "pod:" UID1 " containerd:4eefbcdc8edc" },
	{ .path = KUBE_BE "kubepods-besteffort-pod" UID2_ ".slice/crio-" ID4 ".scope",
	  .rt = CG_RT_CRIO, .id = ID4, .pod = UID2, .qos = CG_QOS_BESTEFFORT,
	  .unit = "crio-" ID4 ".scope", .slice = "kubepods-besteffort-pod" UID2_ ".slice",
	  .label = "pod:" UID2 " cri-o:d505106006e2" },
	/* conmon watches the container from beside it */
	{ .path = KUBE_BE "kubepods-besteffort-pod" UID2_ ".slice/crio-conmon-" ID4 ".scope",
	  .pod = UID2, .qos = CG_QOS_BESTEFFORT, .unit = "crio-conmon-" ID4 ".scope",
	  .slice = "kubepods-besteffort-pod" UID2_ ".slice", .label = "pod:" UID2 },
	{ .path = "/kubepods.slice/kubepods-pod" UID3_ ".slice/cri-containerd-" ID5 ".scope",
	  .rt = CG_RT_CONTAINERD, .id = ID5, .pod = UID3, .qos = CG_QOS_GUARANTEED,
	  .unit = "cri-containerd-" ID5 ".scope", .slice = "kubepods-pod" UID3_ ".slice",
	  .label = "pod:" UID3 " containerd:8fe8322aed15" },
	{ .path = KUBE_BU "kubepods-burstable-pod" UID1_ ".slice", .pod = UID1,
	  .qos = CG_QOS_BURSTABLE, .slice = "kubepods-burstable-pod" UID1_ ".slice",
	  .label = "pod:" UID1 },
	{ .path = "/kubepods.slice/kubepods-besteffort.slice",
	  .slice = "kubepods-besteffort.slice", .label = "kubepods-besteffort.slice" },
	{ .path = "/kubepods.slice/kubepods-pod" UID3_ ".slice/docker-" ID6 ".scope",
	  .rt = CG_RT_DOCKER, .id = ID6, .pod = UID3, .qos = CG_QOS_GUARANTEED,
	  .unit = "docker-" ID6 ".scope", .slice = "kubepods-pod" UID3_ ".slice",
	  .label = "pod:" UID3 " docker:cd0248617e29" },
	/* kind: the kubelet's slices nest under its own */
	{ .path = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
		  "kubelet-kubepods-besteffort-pod" UID2_ ".slice/cri-containerd-" ID7 ".scope",
	  .rt = CG_RT_CONTAINERD, .id = ID7, .pod = UID2, .qos = CG_QOS_BESTEFFORT,
	  .unit = "cri-containerd-" ID7 ".scope",
	  .slice = "kubelet-kubepods-besteffort-pod" UID2_ ".slice",
	  .label = "pod:" UID2 " containerd:d9652ea41861" },
	{ .path = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UID1_ ".slice",
	  .pod = UID1, .qos = CG_QOS_GUARANTEED, .slice = "kubelet-kubepods-pod" UID1_ ".slice",
	  .label = "pod:" UID1 },
	/* static pods (etcd, kube-apiserver) */
	{ .path = KUBE_BU "kubepods-burstable-pod" STATIC_UID ".slice/cri-containerd-" ID8 ".scope",
	  .rt = CG_RT_CONTAINERD, .id = ID8, .pod = STATIC_UID, .qos = CG_QOS_BURSTABLE,
	  .unit = "cri-containerd-" ID8 ".scope",
	  .slice = "kubepods-burstable-pod" STATIC_UID ".slice",
	  .label = "pod:" STATIC_UID " containerd:f60309815e58" },
	/* a UID that is not one: no pod, so no QoS either */
	{ .path = KUBE_BU "kubepods-burstable-podnot_a_uid.slice/cri-containerd-" ID3 ".scope",
	  .rt = CG_RT_CONTAINERD, .id = ID3, .unit = "cri-containerd-" ID3 ".scope",
	  .slice = "kubepods-burstable-podnot_a_uid.slice", .label = "containerd:4eefbcdc8edc" },
	{ .path = KUBE_BU "kubepods-burstable-pod28317a2c0_31f_4992_8e06_d708fab9fd1c.slice",
	  .slice = "kubepods-burstable-pod28317a2c0_31f_4992_8e06_d708fab9fd1c.slice",
	  .label = "kubepods-burstable-pod28317a2c0_31f_4992_8e06_d708fab9fd1c.slice" },
	{ .path = "/kubepods.slice/kubepods-guaranteed-pod" UID1_ ".slice",
	  .slice = "kubepods-guaranteed-pod" UID1_ ".slice",
	  .label = "kubepods-guaranteed-pod" UID1_ ".slice" },

	/* the kubelet's cgroupfs driver */
	{ .path = "/kubepods/burstable/pod" UID1 "/" ID6, .rt = CG_RT_CONTAINERD, .id = ID6,
	  .pod = UID1, .qos = CG_QOS_BURSTABLE, .label = "pod:" UID1 " containerd:cd0248617e29" },
	{ .path = "/kubepods/besteffort/pod" UID2 "/crio-" ID7, .rt = CG_RT_CRIO, .id = ID7,
	  .pod = UID2, .qos = CG_QOS_BESTEFFORT, .label = "pod:" UID2 " cri-o:d9652ea41861" },
	{ .path = "/kubepods/besteffort/pod" UID2 "/crio-conmon-" ID7, .pod = UID2,
	  .qos = CG_QOS_BESTEFFORT, .label = "pod:" UID2 },
	{ .path = "/kubepods/pod" UID4 "/" ID8, .rt = CG_RT_CONTAINERD, .id = ID8, .pod = UID4,
	  .qos = CG_QOS_GUARANTEED, .label = "pod:" UID4 " containerd:f60309815e58" },
	{ .path = "/kubepods/besteffort/pod" UID3, .pod = UID3, .qos = CG_QOS_BESTEFFORT,
	  .label = "pod:" UID3 },
	{ .path = "/kubepods/burstable/pod" UID1 "/ab5996f44dc5", .pod = UID1,
	  .qos = CG_QOS_BURSTABLE, .label = "pod:" UID1 },
	{ .path = "/kubepods/burstable", .label = "" },
	/* k3d: k3s inside a docker container; the node's container is not the pod's */
	{ .path = "/docker/" ID1 "/kubepods/burstable/pod" UID1 "/" ID6, .rt = CG_RT_CONTAINERD,
	  .id = ID6, .pod = UID1, .qos = CG_QOS_BURSTABLE,
	  .label = "pod:" UID1 " containerd:cd0248617e29" },
	{ .path = "/docker/" ID1 "/kubepods/besteffort/pod" UID2, .pod = UID2,
	  .qos = CG_QOS_BESTEFFORT, .label = "pod:" UID2 },

	/* podman */
	{ .path = "/machine.slice/libpod-" ID5 ".scope", .rt = CG_RT_PODMAN, .id = ID5,
	  .unit = "libpod-" ID5 ".scope", .slice = "machine.slice",
	  .label = "podman:8fe8322aed15" },
	{ .path = "/machine.slice/libpod-" ID5 ".scope/container", .rt = CG_RT_PODMAN, .id = ID5,
	  .unit = "libpod-" ID5 ".scope", .slice = "machine.slice",
	  .label = "podman:8fe8322aed15" },
	{ .path = "/machine.slice/libpod-conmon-" ID5 ".scope",
	  .unit = "libpod-conmon-" ID5 ".scope", .slice = "machine.slice",
	  .label = "libpod-conmon-" ID5 ".scope" },
	{ .path = USER_MGR "/user.slice/libpod-" ID4 ".scope", .rt = CG_RT_PODMAN, .id = ID4,
	  .unit = "libpod-" ID4 ".scope", .slice = "user.slice", .label = "podman:d505106006e2" },
	{ .path = "/libpod_parent/libpod-" ID4, .rt = CG_RT_PODMAN, .id = ID4,
	  .label = "podman:d505106006e2" },

	/* LXC and LXD */
	{ .path = "/lxc/web01", .rt = CG_RT_LXC, .name = "web01", .label = "lxc:web01" },
	{ .path = "/lxc.payload.web01", .rt = CG_RT_LXC, .name = "web01", .label = "lxc:web01" },
	{ .path = "/lxc.payload/web01", .rt = CG_RT_LXC, .name = "web01", .label = "lxc:web01" },
	{ .path = "/lxc.monitor.web01" },
	{ .path = "/lxc.monitor/web01" },
	{ .path = "/lxc.payload.web01/system.slice/nginx.service", .rt = CG_RT_LXC,
	  .name = "web01", .unit = "nginx.service", .slice = "system.slice",
	  .label = "lxc:web01" },
	{ .path = "/lxc.payload.", .label = "" },

	/* systemd-nspawn */
	{ .path = "/machine.slice/systemd-nspawn@debian-bookworm.service", .rt = CG_RT_NSPAWN,
	  .name = "debian-bookworm", .unit = "systemd-nspawn@debian-bookworm.service",
	  .slice = "machine.slice", .label = "nspawn:debian-bookworm" },
	{ .path = "/machine.slice/systemd-nspawn@fedora.service/payload/system.slice/sshd.service",
	  .rt = CG_RT_NSPAWN, .name = "fedora", .unit = "sshd.service", .slice = "system.slice",
	  .label = "nspawn:fedora" },
	{ .path = "/machine.slice/systemd-nspawn@.service", .unit = "systemd-nspawn@.service",
	  .slice = "machine.slice", .label = "systemd-nspawn@.service" },

	/* plain systemd */
	{ .path = "/system.slice/postgresql@15-main.service", .unit = "postgresql@15-main.service",
	  .slice = "system.slice", .label = "postgresql@15-main.service" },
	{ .path = "/user.slice/user-1000.slice/session-3.scope", .unit = "session-3.scope",
	  .slice = "user-1000.slice", .label = "session-3.scope" },
	{ .path = "/user.slice/user-1000.slice", .slice = "user-1000.slice",
	  .label = "user-1000.slice" },
	{ .path = USER_MGR "/app.slice/app-gnome-firefox-4242.scope",
	  .unit = "app-gnome-firefox-4242.scope", .slice = "app.slice",
	  .label = "app-gnome-firefox-4242.scope" },
	{ .path = USER_MGR "/init.scope", .unit = "init.scope", .slice = "user-1000.slice",
	  .label = "init.scope" },
	{ .path = "//system.slice//cron.service/", .unit = "cron.service", .slice = "system.slice",
	  .label = "cron.service" },
	{ .path = "/system.slice/dbus.socket", .unit = "dbus.socket", .slice = "system.slice",
	  .label = "dbus.socket" },
	{ .path = "/system.slice/var-lib-machines.mount", .unit = "var-lib-machines.mount",
	  .slice = "system.slice", .label = "var-lib-machines.mount" },
	{ .path = "/system.slice/dev-zram0.swap", .unit = "dev-zram0.swap",
	  .slice = "system.slice", .label = "dev-zram0.swap" },
	{ .path = "/system.slice/.service", .slice = "system.slice", .label = "system.slice" },
	{ .path = "/system.slice/multi-user.target", .slice = "system.slice",
	  .label = "system.slice" },
};

static void check_str(const char *path, const char *field, const char *want, const char *got,
		      size_t cap)
{
	if (!want)
		want = "";
	if (strnlen(got, cap) == cap)
		fail_msg("%s: %s is not terminated", path, field);
	if (strcmp(want, got) != 0)
		fail_msg("%s: %s: want \"%s\", got \"%s\"", path, field, want, got);
}

static void parse_ok(const char *path, struct cg_identity *id)
{
	/* garbage first: parse must not leave any of it behind */
	memset(id, 0xa5, sizeof(*id));
	assert_int_equal(cg_identity_parse(path, id), 0);
}

static void test_table(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct id_case *c = &cases[i];
		struct cg_identity id;
		char label[512];
		int n;

		parse_ok(c->path, &id);
		if (id.runtime != c->rt)
			fail_msg("%s: runtime: want %s, got %s", c->path, cg_runtime_name(c->rt),
				 cg_runtime_name(id.runtime));
		if (id.qos != c->qos)
			fail_msg("%s: qos: want %s, got %s", c->path, cg_qos_name(c->qos),
				 cg_qos_name(id.qos));
		check_str(c->path, "container_id", c->id, id.container_id,
			  sizeof(id.container_id));
		check_str(c->path, "container_name", c->name, id.container_name,
			  sizeof(id.container_name));
		check_str(c->path, "pod_uid", c->pod, id.pod_uid, sizeof(id.pod_uid));
		check_str(c->path, "unit", c->unit, id.unit, sizeof(id.unit));
		check_str(c->path, "slice", c->slice, id.slice, sizeof(id.slice));

		n = cg_identity_label(&id, label, sizeof(label));
		assert_true(n >= 0 && (size_t)n < sizeof(label));
		check_str(c->path, "label", c->label, label, sizeof(label));
	}
}

static void test_null_args(void **state)
{
	struct cg_identity id;
	char buf[8];

	memset(&id, 0xa5, sizeof(id));
	assert_int_equal(cg_identity_parse(NULL, &id), -EINVAL);
	/* "always fills @out": even the refused call leaves it empty */
	assert_int_equal(id.runtime, CG_RT_NONE);
	assert_string_equal(id.unit, "");
	assert_int_equal(cg_identity_parse("/docker/" ID1, NULL), -EINVAL);

	assert_int_equal(cg_identity_label(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(cg_identity_label(&id, NULL, sizeof(buf)), -EINVAL);
}

static void test_names(void **state)
{
	static const struct {
		enum cg_runtime rt;
		const char *name;
	} rts[] = {
		{ CG_RT_NONE, "" },
		{ CG_RT_DOCKER, "docker" },
		{ CG_RT_CONTAINERD, "containerd" },
		{ CG_RT_CRIO, "cri-o" },
		{ CG_RT_PODMAN, "podman" },
		{ CG_RT_LXC, "lxc" },
		{ CG_RT_NSPAWN, "nspawn" },
		{ (enum cg_runtime)99, "" },
	};
	static const struct {
		enum cg_qos qos;
		const char *name;
	} qoses[] = {
		{ CG_QOS_NONE, "" },
		{ CG_QOS_GUARANTEED, "guaranteed" },
		{ CG_QOS_BURSTABLE, "burstable" },
		{ CG_QOS_BESTEFFORT, "besteffort" },
		{ (enum cg_qos)99, "" },
	};

	for (size_t i = 0; i < sizeof(rts) / sizeof(rts[0]); i++)
		assert_string_equal(cg_runtime_name(rts[i].rt), rts[i].name);
	for (size_t i = 0; i < sizeof(qoses) / sizeof(qoses[0]); i++)
		assert_string_equal(cg_qos_name(qoses[i].qos), qoses[i].name);
}

/* snprintf rules: the wanted length back, the text cut to fit, always terminated */
static void test_label_truncation(void **state)
{
	static const char full[] = "pod:" UID1 " containerd:4eefbcdc8edc";
	struct cg_identity id;
	char buf[sizeof(full)];
	int want = (int)strlen(full);

	parse_ok(KUBE_BU "kubepods-burstable-pod" UID1_ ".slice/cri-containerd-" ID3 ".scope",
		 &id);

	assert_int_equal(cg_identity_label(&id, NULL, 0), want);
	assert_int_equal(cg_identity_label(&id, buf, sizeof(buf)), want);
	assert_string_equal(buf, full);

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(cg_identity_label(&id, buf, 10), want);
	assert_string_equal(buf, "pod:28317");
	assert_int_equal(buf[10], 'x'); /* nothing written past @len */

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(cg_identity_label(&id, buf, 1), want);
	assert_string_equal(buf, "");
	assert_int_equal(buf[1], 'x');

	memset(&id, 0, sizeof(id));
	assert_int_equal(cg_identity_label(&id, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

/* the fields are fixed arrays: check none of them ran past its end */
static void assert_terminated(const struct cg_identity *id)
{
	assert_true(strnlen(id->container_id, sizeof(id->container_id)) < sizeof(id->container_id));
	assert_true(strnlen(id->container_name, sizeof(id->container_name)) <
		    sizeof(id->container_name));
	assert_true(strnlen(id->pod_uid, sizeof(id->pod_uid)) < sizeof(id->pod_uid));
	assert_true(strnlen(id->unit, sizeof(id->unit)) < sizeof(id->unit));
	assert_true(strnlen(id->slice, sizeof(id->slice)) < sizeof(id->slice));
}

/* @prefix, then @n copies of @fill, then @suffix, in a fresh heap buffer */
static char *make_path(const char *prefix, char fill, size_t n, const char *suffix)
{
	size_t plen = strlen(prefix), slen = strlen(suffix);
	char *p = malloc(plen + n + slen + 1);

	assert_non_null(p);
	memcpy(p, prefix, plen);
	memset(p + plen, fill, n);
	memcpy(p + plen + n, suffix, slen + 1);
	return p;
}

/*
 * Components longer than a kernfs name cannot come from a real hierarchy;
 * they must be ignored without touching memory past the fixed fields.
 */
static void test_overlong(void **state)
{
	static const struct {
		const char *prefix;
		char fill;
		const char *suffix;
		const char *slice; /* what survives from the sane components */
	} shapes[] = {
		{ "/", 'a', "", "" },
		{ "/docker/", 'a', "", "" },
		{ "/system.slice/docker-", 'a', ".scope", "system.slice" },
		{ "/system.slice/", 'a', ".service", "system.slice" },
		{ "/", 'a', ".slice", "" },
		{ "/kubepods.slice/kubepods-pod", 'a', ".slice", "kubepods.slice" },
		{ "/kubepods.slice/kubepods-pod", '_', ".slice", "kubepods.slice" },
		{ "/kubepods/burstable/pod", 'a', "", "" },
		{ "/kubepods/burstable/pod" UID1 "/", 'a', "", "" },
		{ "/lxc/", 'x', "", "" },
		{ "/lxc.payload.", 'x', "", "" },
		{ "/machine.slice/systemd-nspawn@", 'x', ".service", "machine.slice" },
		{ "/machine.slice/libpod-", 'f', ".scope", "machine.slice" },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		char *path = make_path(shapes[i].prefix, shapes[i].fill, 4000, shapes[i].suffix);
		struct cg_identity id;

		parse_ok(path, &id);
		assert_terminated(&id);
		/* pod_uid is not checked: one shape has a valid pod above the long leaf */
		if (id.runtime != CG_RT_NONE || id.container_id[0] || id.container_name[0] ||
		    id.unit[0] || strcmp(id.slice, shapes[i].slice) != 0)
			fail_msg("%s...%s: expected nothing from the long component",
				 shapes[i].prefix, shapes[i].suffix);
		free(path);
	}
}

static void test_many_components(void **state)
{
	/* 2000 components of "/a", then a real container at the bottom */
	char *path = make_path("", 'a', 4000, "/docker/" ID1);
	struct cg_identity id;

	for (size_t i = 0; i < 4000; i += 2)
		path[i] = '/';
	parse_ok(path, &id);
	assert_int_equal(id.runtime, CG_RT_DOCKER);
	assert_string_equal(id.container_id, ID1);
	free(path);
}

/* kernfs allows 255 bytes a name, and so does systemd: the edge is kept */
static void test_name_limits(void **state)
{
	struct cg_identity id;
	char *path;

	path = make_path("/system.slice/", 'u', CG_UNIT_MAX - strlen(".service"), ".service");
	parse_ok(path, &id);
	assert_int_equal(strlen(id.unit), CG_UNIT_MAX);
	free(path);

	path = make_path("/system.slice/", 'u', CG_UNIT_MAX + 1 - strlen(".service"), ".service");
	parse_ok(path, &id);
	assert_string_equal(id.unit, "");
	assert_string_equal(id.slice, "system.slice");
	free(path);

	path = make_path("/lxc/", 'n', CG_UNIT_MAX, "");
	parse_ok(path, &id);
	assert_int_equal(id.runtime, CG_RT_LXC);
	assert_int_equal(strlen(id.container_name), CG_UNIT_MAX);
	free(path);

	path = make_path("/lxc/", 'n', CG_UNIT_MAX + 1, "");
	parse_ok(path, &id);
	assert_int_equal(id.runtime, CG_RT_NONE);
	assert_string_equal(id.container_name, "");
	free(path);

	path = make_path("/system.slice/docker-", 'a', CG_CONTAINER_ID_MAX, ".scope");
	parse_ok(path, &id);
	assert_int_equal(id.runtime, CG_RT_DOCKER);
	assert_int_equal(strlen(id.container_id), CG_CONTAINER_ID_MAX);
	free(path);
}

/* cgroup names may hold any byte but '/' and NUL; they are kept verbatim */
static void test_hostile(void **state)
{
	static const struct {
		const char *path;
		enum cg_runtime rt;
		const char *name;
		const char *unit;
		const char *label;
	} hostile[] = {
		{ "/lxc/we\"ird\\name\n\xc3\xa9t\xc3\xa9", CG_RT_LXC,
		  "we\"ird\\name\n\xc3\xa9t\xc3\xa9", "", "lxc:we\"ird\\name\n\xc3\xa9t\xc3\xa9" },
		{ "/lxc.payload.\xff\xfe\x01", CG_RT_LXC, "\xff\xfe\x01", "", "lxc:\xff\xfe\x01" },
		{ "/system.slice/evil\"\n\\x2d\xe2\x98\x83.service", CG_RT_NONE, "",
		  "evil\"\n\\x2d\xe2\x98\x83.service", "evil\"\n\\x2d\xe2\x98\x83.service" },
		{ "/machine.slice/systemd-nspawn@a\"b\nc.service", CG_RT_NSPAWN, "a\"b\nc",
		  "systemd-nspawn@a\"b\nc.service", "nspawn:a\"b\nc" },
		{ "/docker/\xc3\xa9" ID1, CG_RT_NONE, "", "", "" },
		{ "/system.slice/docker-" ID1 "\n.scope", CG_RT_NONE, "",
		  "docker-" ID1 "\n.scope", "docker-" ID1 "\n.scope" },
		{ "/kubepods/burstable/pod" UID1 "\"/" ID6, CG_RT_CONTAINERD, "", "",
		  "containerd:cd0248617e29" },
		{ "/\n/\"/\\/\t", CG_RT_NONE, "", "", "" },
	};

	for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		struct cg_identity id;
		char label[512];

		parse_ok(hostile[i].path, &id);
		assert_terminated(&id);
		assert_int_equal(id.runtime, hostile[i].rt);
		assert_string_equal(id.container_name, hostile[i].name);
		assert_string_equal(id.unit, hostile[i].unit);
		assert_string_equal(id.pod_uid, "");
		assert_int_equal(cg_identity_label(&id, label, sizeof(label)),
				 (int)strlen(hostile[i].label));
		assert_string_equal(label, hostile[i].label);
	}
}

TL_MAIN(test_table, test_null_args, test_names, test_label_truncation, test_overlong,
	test_many_components, test_name_limits, test_hostile)
