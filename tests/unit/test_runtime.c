// SPDX-License-Identifier: MIT
/*
 * cgroup/runtime: identity from the runtimes, against golden files in
 * tests/data/runtime/ placed in a fake root (containerd's and CRI-O's
 * config.json, podman's containers.json, unit files), a fake engine on a
 * unix socket (podman's and docker's inspect answers, a 404, a socket that
 * never answers), and hostile files (huge, malformed, too deep, NUL and
 * invalid UTF-8, a FIFO, too many labels). The cache's worker is checked
 * not to block its callers on a stalled socket.
 *
 * podman-4.3-*.json were captured from podman 4.3.1 on Debian 12; the
 * containerd, CRI-O and docker files are written by hand from the
 * annotation and label keys those runtimes document.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cgroup/runtime.h"
#include "lib/clock.h"
#include "testlib.h"

#define CTRD_ID "abcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdefabcdef0123"
#define CRIO_ID "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define POD_ID "930964e62dfcf7c3be3f1726c34a6118208df0003742e8ca128a9f1aa9ceba05"
#define DOCK_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CTRD_DIR "run/containerd/io.containerd.runtime.v2.task/k8s.io/"
#define CRIO_DIR "run/containers/storage/overlay-containers/"

static char *fixture(const char *name)
{
	char path[256];
	char *s;

	tl_pathf(path, sizeof(path), "tests/data/runtime/%s", name);
	s = tl_read_file(path, 1 << 20, NULL);
	if (!s)
		fail_msg("fixture %s: %s", path, strerror(errno));
	return s;
}

static void place(const char *root, const char *rel, const char *name)
{
	char *s = fixture(name);

	tl_write_file(root, rel, s);
	free(s);
}

static int lookup(const char *root, const char *path, struct cg_rtinfo *ri)
{
	struct cg_rt_sources src = { .root = root, .docker_sock = "", .podman_sock = "" };
	struct cg_identity id;

	assert_int_equal(cg_identity_parse(path, &id), 0);
	return cg_rt_lookup(&src, &id, ri);
}

/* Every case runs in a fresh temp directory (its fake root, or where the
 * fake engine's socket goes): made by the fixture, removed after the case. */
struct rt_fx {
	struct tl_fake f;
	char sock[256]; /* the fake engine's socket, in the directory */
};

static int tmp_setup(void **state)
{
	struct rt_fx *x = tl_fake_new("rt", sizeof(struct rt_fx));

	tl_pathf(x->sock, sizeof(x->sock), "%s/engine.sock", x->f.root);
	*state = x;
	return 0;
}

static const char *tmp_root(void **state)
{
	return ((struct rt_fx *)*state)->f.root;
}

static const char *engine_sock(void **state)
{
	return ((struct rt_fx *)*state)->sock;
}

static void test_containerd(void **state)
{
	const char *root = tmp_root(state);
	struct cg_rtinfo ri;
	const char *cg = "/kubepods.slice/kubepods-burstable.slice/"
			 "kubepods-burstable-pod12345678_1234_1234_1234_123456789abc.slice/"
			 "cri-containerd-" CTRD_ID ".scope";

	place(root, CTRD_DIR CTRD_ID "/config.json", "containerd-1.6-cri.config.json");
	assert_int_equal(lookup(root, cg, &ri), 1);
	assert_string_equal(ri.name, "postgres");
	assert_string_equal(ri.image, "docker.io/library/postgres:15");
	assert_string_equal(ri.pod_name, "db-0");
	assert_string_equal(ri.pod_namespace, "prod");
	assert_string_equal(ri.source, "oci-config");
	char buf[64];
	assert_int_equal(cg_rtinfo_display(&ri, buf, sizeof(buf)), (int)strlen("prod/db-0/postgres"));
	assert_string_equal(buf, "prod/db-0/postgres");
	cg_rtinfo_release(&ri);

	/* the pause container: a pod, no container name */
	place(root, CTRD_DIR CTRD_ID "/config.json", "containerd-1.6-sandbox.config.json");
	assert_int_equal(lookup(root, cg, &ri), 1);
	assert_null(ri.name);
	assert_string_equal(ri.pod_name, "db-0");
	cg_rtinfo_release(&ri);
}

static void test_crio(void **state)
{
	const char *root = tmp_root(state);
	struct cg_rtinfo ri;

	place(root, CRIO_DIR CRIO_ID "/userdata/config.json", "crio-1.25.config.json");
	assert_int_equal(lookup(root, "/kubepods.slice/crio-" CRIO_ID ".scope", &ri), 1);
	assert_string_equal(ri.name, "web");
	assert_string_equal(ri.image, "quay.io/example/nginx:1.25");
	assert_string_equal(ri.pod_name, "frontend-7d9c");
	assert_string_equal(ri.pod_namespace, "shop");
	assert_string_equal(cg_rtinfo_label(&ri, "app"), "frontend");
	/* sorted by key */
	for (size_t i = 1; i < ri.nlabels; i++)
		assert_true(strcmp(ri.labels[i - 1].key, ri.labels[i].key) < 0);
	cg_rtinfo_release(&ri);
	/* a cgroupfs kubepods leaf is reported as containerd; CRI-O's bundle answers */
	assert_int_equal(lookup(root, "/kubepods/burstable/pod87654321-4321-4321-4321-cba987654321/" CRIO_ID, &ri), 1);
	assert_string_equal(ri.name, "web");
	cg_rtinfo_release(&ri);
	/* nothing there */
	assert_int_equal(lookup(root, "/kubepods.slice/crio-" CTRD_ID ".scope", &ri), 0);
	assert_true(cg_rtinfo_empty(&ri));
}

static void test_podman_store(void **state)
{
	const char *root = tmp_root(state);
	struct cg_rtinfo ri;

	place(root, "var/lib/containers/storage/overlay-containers/containers.json",
	      "podman-4.3-containers.json");
	assert_int_equal(lookup(root, "/libpod_parent/libpod-" POD_ID, &ri), 1);
	assert_string_equal(ri.name, "identtest");
	assert_string_equal(ri.image, "localhost/cgperf-busybox:test");
	assert_string_equal(ri.source, "podman-store");
	cg_rtinfo_release(&ri);
}

static void test_systemd(void **state)
{
	const char *root = tmp_root(state);
	struct cg_rtinfo ri;

	place(root, "lib/systemd/system/postgresql@.service", "systemd/postgresql@.service");
	place(root, "lib/systemd/system/cron.service", "systemd/cron.service");
	assert_int_equal(lookup(root, "/system.slice/postgresql@15-main.service", &ri), 1);
	assert_string_equal(ri.description, "PostgreSQL Cluster 15-main");
	assert_string_equal(ri.source, "systemd-unit");
	cg_rtinfo_release(&ri);
	assert_int_equal(lookup(root, "/system.slice/cron.service", &ri), 1);
	assert_string_equal(ri.description, "Regular background program processing daemon");
	cg_rtinfo_release(&ri);
	/* /etc overrides /lib */
	tl_write_file(root, "etc/systemd/system/cron.service", "[Unit]\nDescription=local cron\n");
	assert_int_equal(lookup(root, "/system.slice/cron.service", &ri), 1);
	assert_string_equal(ri.description, "local cron");
	cg_rtinfo_release(&ri);
	assert_int_equal(lookup(root, "/system.slice/nosuch.service", &ri), 0);
	assert_int_equal(lookup(root, "/user.slice", &ri), 0);
}

/* A file of @n bytes: '[' repeated (too deep), or a string of junk. */
static void hostile_files(const char *root)
{
	char *big = malloc(5u << 20), *deep = malloc(4001);
	char rel[256];

	assert_non_null(big);
	assert_non_null(deep);
	memset(big, ' ', 5u << 20);
	big[0] = '{';
	big[(5u << 20) - 2] = '}';
	big[(5u << 20) - 1] = '\0';
	memset(deep, '[', 4000);
	deep[4000] = '\0';
	tl_pathf(rel, sizeof(rel), CTRD_DIR "%064d/config.json", 1);
	tl_write_file(root, rel, big);
	tl_pathf(rel, sizeof(rel), CTRD_DIR "%064d/config.json", 2);
	tl_write_file(root, rel, deep);
	tl_pathf(rel, sizeof(rel), CTRD_DIR "%064d/config.json", 3);
	tl_write_file(root, rel, "{\"annotations\": {\"io.kubernetes.cri.container-name\": \"x\"");
	tl_pathf(rel, sizeof(rel), CTRD_DIR "%064d/config.json", 4);
	tl_write_file(root, rel, "{\"annotations\": [1,2]} trailing");
	tl_pathf(rel, sizeof(rel), CTRD_DIR "%064d/config.json", 5);
	tl_write_file(root, rel,
		      "{\"annotations\": {\"io.kubernetes.cri.container-name\": \"a\\u0000b\","
		      " \"io.kubernetes.cri.sandbox-name\": \"\xff\xfe\","
		      " \"io.kubernetes.cri.sandbox-namespace\": 7}}");
	free(big);
	free(deep);
}

static void test_hostile(void **state)
{
	const char *root = tmp_root(state);
	struct cg_rtinfo ri;
	char cg[256], dir[512], *labels;
	size_t n = 0;

	hostile_files(root);
	for (int i = 1; i <= 5; i++) {
		tl_pathf(cg, sizeof(cg), "/kubepods/pod12345678-1234-1234-1234-123456789abc/%064d", i);
		assert_int_equal(lookup(root, cg, &ri), 0);
		assert_true(cg_rtinfo_empty(&ri));
	}
	/* a FIFO where config.json should be: refused without opening it */
	tl_pathf(dir, sizeof(dir), "%s/" CTRD_DIR "%064d", root, 6);
	tl_mkdirs(dir, NULL);
	tl_pathf(dir, sizeof(dir), "%s/" CTRD_DIR "%064d/config.json", root, 6);
	assert_int_equal(mkfifo(dir, 0600), 0);
	tl_pathf(cg, sizeof(cg), "/kubepods/pod12345678-1234-1234-1234-123456789abc/%064d", 6);
	assert_int_equal(lookup(root, cg, &ri), 0);

	/* 200 labels, one with a 2000-byte value, one with a long key: 64 kept */
	labels = malloc(64 << 10);
	assert_non_null(labels);
	n += (size_t)snprintf(labels + n, 100, "{\"annotations\":{\"io.kubernetes.cri-o.Labels\":\"{");
	n += (size_t)snprintf(labels + n, 3000, "\\\"big\\\":\\\"%02000d\\\",", 0);
	n += (size_t)snprintf(labels + n, 3000, "\\\"%0200d\\\":\\\"v\\\",", 0);
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(labels + n, 100, "%s\\\"k%03d\\\":\\\"v%d\\\"", i ? "," : "", i, i);
	snprintf(labels + n, 100, "}\",\"io.kubernetes.pod.name\":\"p\"}}");
	tl_write_file(root, CRIO_DIR CRIO_ID "/userdata/config.json", labels);
	free(labels);
	assert_int_equal(lookup(root, "/crio-" CRIO_ID ".scope", &ri), 1);
	assert_int_equal(ri.nlabels, CG_RT_LABELS_MAX);
	assert_null(cg_rtinfo_label(&ri, "big"));
	assert_string_equal(cg_rtinfo_label(&ri, "k000"), "v0");
	cg_rtinfo_release(&ri);
}

/* A one-connection-at-a-time HTTP server on a unix socket. */
struct fake_engine {
	int lfd;
	pthread_t th;
	const char *status; /* "200 OK", "404 Not Found"; NULL: never answer */
	char *body;
	int held[8];
	int nheld;
};

static void *engine_main(void *arg)
{
	struct fake_engine *e = arg;
	char req[4096], head[256];
	int fd;

	while ((fd = accept(e->lfd, NULL, NULL)) >= 0) {
		ssize_t r = read(fd, req, sizeof(req));

		(void)r;
		if (!e->status) {
			if (e->nheld < 8)
				e->held[e->nheld++] = fd;
			continue;
		}
		snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 e->status, strlen(e->body));
		if (write(fd, head, strlen(head)) < 0 || write(fd, e->body, strlen(e->body)) < 0)
			break;
		close(fd);
	}
	return NULL;
}

static void engine_start(struct fake_engine *e, const char *sock, const char *status,
			 const char *fixture_name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(e, 0, sizeof(*e));
	e->status = status;
	e->body = fixture_name ? fixture(fixture_name) : strdup("{}");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	e->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(e->lfd >= 0);
	assert_int_equal(bind(e->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(e->lfd, 8), 0);
	assert_int_equal(pthread_create(&e->th, NULL, engine_main, e), 0);
}

static void engine_stop(struct fake_engine *e, const char *sock)
{
	shutdown(e->lfd, SHUT_RDWR);
	pthread_join(e->th, NULL);
	close(e->lfd);
	for (int i = 0; i < e->nheld; i++)
		close(e->held[i]);
	free(e->body);
	unlink(sock);
}

static void test_engine(void **state)
{
	const char *sock = engine_sock(state);
	struct cg_rt_sources src = { .root = "", .timeout_ms = 200 };
	struct fake_engine e;
	struct cg_identity id;
	struct cg_rtinfo ri;
	uint64_t t0;

	src.podman_sock = sock;
	src.docker_sock = sock;

	engine_start(&e, sock, "200 OK", "podman-4.3-compat-inspect.json");
	cg_identity_parse("/machine.slice/libpod-" POD_ID ".scope", &id);
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), 1);
	assert_string_equal(ri.name, "identtest");
	assert_string_equal(ri.image, "localhost/cgperf-busybox:test");
	assert_string_equal(cg_rtinfo_label(&ri, "team"), "db");
	assert_string_equal(ri.source, "podman-api");
	cg_rtinfo_release(&ri);
	engine_stop(&e, sock);

	/* dockershim: the pod from the labels, the container's k8s name */
	engine_start(&e, sock, "200 OK", "docker-24-inspect.json");
	cg_identity_parse("/system.slice/docker-" DOCK_ID ".scope", &id);
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), 1);
	assert_string_equal(ri.name, "app");
	assert_string_equal(ri.pod_name, "api-5c6d");
	assert_string_equal(ri.pod_namespace, "default");
	assert_string_equal(ri.image, "registry.example/api:2.1");
	assert_string_equal(ri.source, "docker-api");
	cg_rtinfo_release(&ri);
	engine_stop(&e, sock);

	engine_start(&e, sock, "404 Not Found", NULL);
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), 0);
	engine_stop(&e, sock);

	/* a socket that never answers: one timeout, then "try later" */
	engine_start(&e, sock, NULL, NULL);
	t0 = clock_mono_ns();
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), -EAGAIN);
	assert_true(clock_mono_ns() - t0 < 2000000000ull);
	engine_stop(&e, sock);

	/* no socket at all: nothing to ask, at once */
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), 0);
}

/* podman's API stalls: the store's answer (no labels) is kept and marked
 * partial; the cache asks the API again after the backoff and gets them. */
static void test_podman_partial(void **state)
{
	const char *root = tmp_root(state);
	const char *sock = engine_sock(state);
	struct cg_rt_sources src = { .root = root, .docker_sock = "", .timeout_ms = 200 };
	const char *cg = "/libpod_parent/libpod-" POD_ID;
	struct fake_engine e;
	struct cg_identity id;
	struct cg_rtinfo ri;
	struct cg_rtcache *c;

	place(root, "var/lib/containers/storage/overlay-containers/containers.json",
	      "podman-4.3-containers.json");
	src.podman_sock = "/engine.sock"; /* sock, inside the root */
	engine_start(&e, sock, NULL, NULL);
	cg_identity_parse(cg, &id);
	assert_int_equal(cg_rt_lookup(&src, &id, &ri), 1);
	assert_true(ri.partial);
	assert_string_equal(ri.source, "podman-store");
	assert_string_equal(ri.name, "identtest");
	assert_null(cg_rtinfo_label(&ri, "team"));
	cg_rtinfo_release(&ri);

	c = cg_rtcache_new(&src, 16, 0);
	assert_non_null(c);
	assert_int_equal(cg_rtcache_want(c, cg), 0);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), 1);
	assert_string_equal(ri.name, "identtest");
	assert_null(cg_rtinfo_label(&ri, "team"));
	cg_rtinfo_release(&ri);
	engine_stop(&e, sock);

	/* the API answers now: asked again after the backoff (1 s), not at the
	 * refresh (5 min) */
	engine_start(&e, sock, "200 OK", "podman-4.3-compat-inspect.json");
	usleep(1100 * 1000);
	assert_int_equal(cg_rtcache_want(c, cg), 0);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), 1);
	assert_string_equal(cg_rtinfo_label(&ri, "team"), "db");
	assert_false(ri.partial);
	assert_string_equal(ri.source, "podman-api");
	cg_rtinfo_release(&ri);
	cg_rtcache_free(c);
	engine_stop(&e, sock);
}

static void test_cache(void **state)
{
	const char *sock = engine_sock(state);
	struct cg_rt_sources src = { .root = "", .timeout_ms = 300 };
	const char *cg = "/system.slice/docker-" DOCK_ID ".scope";
	struct cg_rtcache *c;
	struct fake_engine e;
	struct cg_rtinfo ri;
	uint64_t t0;

	src.docker_sock = sock;
	src.podman_sock = "";
	engine_start(&e, sock, NULL, NULL);
	c = cg_rtcache_new(&src, 16, 0);
	assert_non_null(c);
	t0 = clock_mono_ns();
	assert_int_equal(cg_rtcache_want(c, cg), 0);
	assert_int_equal(cg_rtcache_want(c, cg), 0);
	/* the caller never waits for the stalled socket */
	assert_true(clock_mono_ns() - t0 < 50000000ull);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), -EAGAIN);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), -EAGAIN); /* failed: no answer */
	engine_stop(&e, sock);

	/* the engine comes up: the retry after the backoff (1 s) finds it */
	engine_start(&e, sock, "200 OK", "docker-24-inspect.json");
	assert_int_equal(cg_rtcache_want(c, cg), 0); /* not due yet */
	usleep(1100 * 1000);
	assert_int_equal(cg_rtcache_want(c, cg), 0);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), 1);
	assert_string_equal(ri.pod_name, "api-5c6d");
	cg_rtinfo_release(&ri);
	cg_rtcache_forget(c, cg);
	assert_int_equal(cg_rtcache_get(c, cg, &ri), -EAGAIN);
	/* a path with nothing to ask: answered, nothing known */
	assert_int_equal(cg_rtcache_want(c, "/user.slice"), 0);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, "/user.slice", &ri), 0);
	assert_true(cg_rtcache_generation(c) >= 2);
	/* the entry cap: 16, "/user.slice" and 15 more (the forgotten one is gone) */
	for (int i = 0; i < 15; i++) {
		char p[64];

		tl_pathf(p, sizeof(p), "/x%d", i);
		assert_int_equal(cg_rtcache_want(c, p), 0);
	}
	assert_int_equal(cg_rtcache_want(c, "/one-too-many"), -ENOSPC);
	/* cgroups that come and go: forgotten entries make room */
	for (int i = 0; i < 15; i++) {
		char p[64];

		tl_pathf(p, sizeof(p), "/x%d", i);
		cg_rtcache_forget(c, p);
	}
	for (int i = 0; i < 2000; i++) {
		char p[64];

		tl_pathf(p, sizeof(p), "/churn-%d", i);
		assert_int_equal(cg_rtcache_want(c, p), 0);
		cg_rtcache_forget(c, p);
	}
	assert_int_equal(cg_rtcache_settle(c, 5000), 0);
	assert_int_equal(cg_rtcache_want(c, "/last"), 0);
	assert_int_equal(cg_rtcache_settle(c, 3000), 0);
	assert_int_equal(cg_rtcache_get(c, "/last", &ri), 0);
	cg_rtcache_free(c);
	engine_stop(&e, sock);
}

TL_MAIN_FIXTURE(tmp_setup, tl_fake_teardown, test_containerd, test_crio, test_podman_store, test_podman_partial, test_systemd,
		test_hostile, test_engine, test_cache)
