// SPDX-License-Identifier: MIT
/*
 * cgroup/target: identity terms (container=, image=, pod=, namespace=,
 * unit=) split from the process selector's terms, their errors, matching
 * against a cgroup's identity and runtime answer, and against processes
 * through a fake root (CRI-O's config.json); cgroup/pids over a directory
 * tree shaped like a cgroup hierarchy.
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

#include "agent/cmd/config.h"
#include "cgroup/pids.h"
#include "cgroup/target.h"
#include "testlib.h"

#define CID "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const struct cg_rt_sources nosock = { .docker_sock = "", .podman_sock = "" };

/* Selectors refused, each with a part of its reason
 * (tests/unit/data/target_parse_errors.tsv). */
static void test_parse_errors(void **state)
{
	struct tl_table *bad = tl_table_load("target_parse_errors.tsv", 2);
	char err[256];

	for (size_t i = 0; i < tl_table_rows(bad); i++) {
		const char *spec = tl_table_row(bad, i)[0], *msg = tl_table_row(bad, i)[1];
		struct cg_target *t = cg_target_parse(spec, &nosock, err, sizeof(err));

		assert_null(t);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err, msg))
			fail_msg("%s: '%s': '%s' lacks '%s'", tl_table_where(bad, i), spec, err, msg);
	}
	tl_table_free(bad);
}

static void test_identity_terms(void **state)
{
	struct cg_rtinfo ri = { .name = "web", .image = "quay.io/x/nginx:1.25",
				.pod_name = "frontend-7d9c", .pod_namespace = "shop" };
	struct cg_identity id;
	struct cg_target *t;
	static const struct {
		const char *spec;
		bool want;
	} cases[] = {
		{ "container=web", true },	   { "container=w*", true },
		{ "container=" CID, true },	   { "container=fedcba987654", true },
		{ "container=api", false },	   { "image=*nginx*", true },
		{ "image=*redis*", false },	   { "pod=frontend-*", true },
		{ "pod=87654321-*", true },	   { "namespace=shop", true },
		{ "namespace=prod", false },	   { "unit=crio-*.scope", true },
		{ "container=web,namespace=shop", true },
		{ "container=web,namespace=prod", false },
	};

	cg_identity_parse("/kubepods.slice/kubepods-pod87654321_4321_4321_4321_cba987654321.slice/"
			  "crio-" CID ".scope",
			  &id);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = cg_target_parse(cases[i].spec, &nosock, NULL, 0);
		assert_non_null(t);
		assert_true(cg_target_has_identity(t));
		if (cg_target_match_identity(t, &id, &ri) != cases[i].want)
			fail_msg("%s: want %d", cases[i].spec, cases[i].want);
		/* without the runtime's answer only the path's terms can match */
		if (!strncmp(cases[i].spec, "image", 5))
			assert_false(cg_target_match_identity(t, &id, NULL));
		cg_target_free(t);
	}
	/* process terms alone: no identity */
	t = cg_target_parse("comm=postgres,exe=*/bin/*", &nosock, NULL, 0);
	assert_non_null(t);
	assert_false(cg_target_has_identity(t));
	cg_target_free(t);
}

static void test_match_process(void **state)
{
	char *root = tl_tmpdir("target"), *cfg;
	struct cg_rt_sources src = { .docker_sock = "", .podman_sock = "" };
	struct cg_proc p = { .pid = 42, .comm = "nginx", .cmdline = (char *)"nginx -g x" };
	struct cg_target *t;

	cfg = tl_read_file("tests/data/runtime/crio-1.25.config.json", 1 << 20, NULL);
	assert_non_null(cfg);
	tl_write_file(root, "run/containers/storage/overlay-containers/" CID "/userdata/config.json",
		      cfg);
	free(cfg);
	src.root = root;
	p.cgroup = (char *)"/kubepods.slice/crio-" CID ".scope";
	t = cg_target_parse("comm=ngin*,container=web,namespace=shop,cmdline~-g", &src, NULL, 0);
	assert_non_null(t);
	assert_true(cg_target_match(t, &p));
	assert_true(cg_target_match(t, &p)); /* cached */
	p.cgroup = (char *)"/system.slice/cron.service";
	assert_false(cg_target_match(t, &p));
	p.cgroup = NULL;
	assert_false(cg_target_match(t, &p));
	cg_target_free(t);
	tl_rmtree(root);
}

static void test_pids(void **state)
{
	char *dir = tl_tmpdir("pids");
	int *pids = NULL;
	size_t n = 0;

	tl_write_file(dir, "cgroup.procs", "1\n22\n");
	tl_write_file(dir, "a/cgroup.procs", "333\njunk\n");
	tl_write_file(dir, "a/b/cgroup.procs", "-4\n4444\n");
	tl_write_file(dir, "c/cgroup.procs", "");
	assert_int_equal(cg_pids_under(dir, 100, &pids, &n), 0);
	/* a file's junk ends that file, a bad pid is skipped */
	assert_int_equal(n, 4);
	assert_int_equal(pids[0], 1);
	assert_int_equal(pids[1], 22);
	assert_int_equal(pids[2] + pids[3], 333 + 4444);
	free(pids);
	pids = NULL;
	n = 0;
	assert_int_equal(cg_pids_under(dir, 2, &pids, &n), 0);
	assert_int_equal(n, 2);
	free(pids);
	pids = NULL;
	n = 0;
	assert_int_equal(cg_pids_under("/nonexistent/cg", 10, &pids, &n), 0);
	assert_int_equal(n, 0);
	tl_rmtree(dir);
}

/* run's cgroups.include/exclude items by identity, and the identity: section */
static void test_config_items(void **state)
{
	static const char yaml[] = "cgroups:\n"
				   "  include: [\"namespace=prod\", \"/system.slice/*\"]\n"
				   "  exclude: [\"namespace=prod,container=istio-*\"]\n"
				   "identity: {labels: [app, \"team*\"], timeout: 250ms}\n";
	struct config *c = NULL;
	char err[512];

	assert_null(config_identity_check("container=web*"));
	assert_null(config_identity_check("pod=a,namespace=b,unit=x.service,image=y"));
	assert_non_null(config_identity_check("comm=postgres"));
	assert_non_null(config_identity_check("container="));
	assert_non_null(config_identity_check("container=a,comm=b"));
	assert_int_equal(config_parse("t.yaml", yaml, strlen(yaml), &c, err, sizeof(err)), 0);
	assert_int_equal(c->cgroups.ninclude, 2);
	assert_int_equal(c->identity.timeout_ms, 250);
	assert_true(config_label_wanted(c, "team-a"));
	assert_false(config_label_wanted(c, "secret"));
	/* path matching ignores the identity items */
	assert_true(config_cgroup_wanted(c, "/system.slice/cron.service"));
	assert_false(config_cgroup_wanted(c, "/kubepods.slice"));
	config_free(c);
	c = NULL;
	{
		static const char bad[] = "cgroups: {include: [\"pod=\"]}\n";

		assert_int_equal(config_parse("t.yaml", bad, strlen(bad), &c, err, sizeof(err)),
				 -EINVAL);
	}
	assert_non_null(strstr(err, "identity terms"));
}

TL_MAIN(test_parse_errors, test_identity_terms, test_match_process, test_pids, test_config_items)
