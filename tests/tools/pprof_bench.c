// SPDX-License-Identifier: MIT
/*
 * pprof_bench: the hand-written pprof encoder of exporter/render/render_pprof.c
 * against the same Profile built as protobuf-c structs (proto/profile.proto)
 * and packed with protobuf_c_message_pack() (test-only; not installed).
 *
 *   pprof_bench [--write PREFIX] [N...]
 *       N distinct synthetic stacks each (default 10000 100000 1000000), of
 *       10-30 frames over 400 function names (1 in 8 a kernel "_[k]") in 20
 *       modules. One child process per (N, encoder): CPU time of the
 *       encoding (the shared interning of functions, locations and mappings
 *       excluded, and included in "total"), its peak RSS growth, the bytes,
 *       then gzip (GZIP_FASTEST, as render_pprof) of those bytes. The table
 *       goes to stdout; "same" says whether both encoders wrote identical
 *       bytes. --write keeps both profiles of the first N, gzip'd, as
 *       PREFIX.hand.pb.gz and PREFIX.pbc.pb.gz (for `go tool pprof -raw`).
 *
 * The encoder's statics are reached by including its source: both sides then
 * share pprof_intern(), the interning render_pprof() does, and only the
 * writing differs (encode() against pbc_encode() here).
 */
#include "exporter/render/render_pprof.c"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "proto/profile.pb-c.h"

#define NNAMES 400
#define NMODS 20

static char mod_path[NMODS + 1][64], mod_build[NMODS + 1][48];

static int bench_module(void *arg, const char *frame, uint32_t module, struct render_module *out)
{
	(void)arg;
	(void)frame;
	if (!module || module > NMODS)
		return -1;
	out->path = mod_path[module];
	out->build_id = mod_build[module];
	return 0;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* @n distinct stacks, the same for every run of @n. NULL on failure. */
static struct fold_set *make_set(uint32_t n)
{
	struct fold_set *fs = fold_set_new();
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ n;
	char line[30 * 24];
	uint32_t mods[30];

	for (uint32_t m = 1; m <= NMODS; m++) {
		snprintf(mod_path[m], sizeof(mod_path[m]), "/usr/lib/x86_64-linux-gnu/libmod%02u.so.1", m);
		snprintf(mod_build[m], sizeof(mod_build[m]), "%040x", m * 2654435761u);
	}
	while (fs && fold_set_stacks(fs) < n) {
		uint32_t depth = 10 + (uint32_t)(rnd(&seed) % 21);
		size_t len = 0;

		for (uint32_t i = 0; i < depth; i++) {
			/* Roots from a few names, leaves from all: stacks share
			 * prefixes as real ones do. */
			uint32_t span = i < 4 ? 8 + i * 8 : NNAMES;
			uint32_t f = (uint32_t)(rnd(&seed) % span);

			len += (size_t)snprintf(line + len, sizeof(line) - len, "%sfunc_%03u%s",
						i ? ";" : "", f, f % 8 == 7 ? "_[k]" : "");
			mods[i] = f % 8 == 7 ? NMODS : 1 + f % (NMODS - 1);
		}
		if (fold_set_add_mod(fs, line, mods, depth, 1 + rnd(&seed) % 50,
				     (1 + rnd(&seed) % 50) * 10000000ULL) < 0) {
			fold_set_free(fs);
			return NULL;
		}
	}
	return fs;
}

typedef Perftools__Profiles__ValueType PValueType;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Mapping PMapping;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;

/* Every array the protobuf-c Profile points into, freed at once. */
struct pbc_mem {
	PValueType vt[3], *vtp[2];
	PSample *s, **sp;
	uint64_t *locid;
	int64_t *val;
	PMapping *m, **mp;
	PLocation *l, **lp;
	PLine *ln, **lnp;
	PFunction *f, **fp;
	char **str;
	uint32_t *new_id;
};

static void pbc_mem_free(struct pbc_mem *k)
{
	void *all[] = { k->s, k->sp, k->locid, k->val, k->m, k->mp, k->l, k->lp,
			k->ln, k->lnp, k->f, k->fp, k->str, k->new_id };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
}

/* The Profile that encode() writes, as protobuf-c structs. 0 or -ENOMEM. */
static int pbc_build(const struct fold_set *fs, struct pprof *p, struct pbc_mem *k,
		     Perftools__Profiles__Profile *pr)
{
	uint32_t nm = p->mappings.n, nl = p->locations.n, nstr = p->strings.n;
	size_t at = 0;

	k->new_id = rank_mappings(fs, p);
	k->s = calloc(fs->nst + 1, sizeof(*k->s));
	k->sp = calloc(fs->nst + 1, sizeof(*k->sp));
	k->locid = calloc(fs->nids + 1, sizeof(*k->locid));
	k->val = calloc(2 * (size_t)fs->nst + 1, sizeof(*k->val));
	k->m = calloc(nm + 1, sizeof(*k->m));
	k->mp = calloc(nm + 1, sizeof(*k->mp));
	k->l = calloc(nl + 1, sizeof(*k->l));
	k->lp = calloc(nl + 1, sizeof(*k->lp));
	k->ln = calloc(nl + 1, sizeof(*k->ln));
	k->lnp = calloc(nl + 1, sizeof(*k->lnp));
	k->f = calloc(p->nfn + 1, sizeof(*k->f));
	k->fp = calloc(p->nfn + 1, sizeof(*k->fp));
	k->str = calloc(nstr + 1, sizeof(*k->str));
	if (!k->new_id || !k->s || !k->sp || !k->locid || !k->val || !k->m || !k->mp || !k->l ||
	    !k->lp || !k->ln || !k->lnp || !k->f || !k->fp || !k->str)
		return -ENOMEM;

	for (int i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&k->vt[i]);
	k->vt[0].type = p->s_samples;
	k->vt[0].unit = p->s_count;
	k->vt[1].type = k->vt[2].type = p->s_cpu;
	k->vt[1].unit = k->vt[2].unit = p->s_ns;
	k->vtp[0] = &k->vt[0];
	k->vtp[1] = &k->vt[1];
	pr->n_sample_type = 2;
	pr->sample_type = k->vtp;

	for (uint32_t i = 0; i < fs->nst; i++) {
		const struct fold_stack *s = &fs->st[i];
		PSample *o = &k->s[i];

		perftools__profiles__sample__init(o);
		o->location_id = k->locid + at;
		o->n_location_id = s->depth;
		for (uint32_t d = s->depth; d-- > 0;)
			k->locid[at++] = (uint64_t)p->loc_of_id[s->off + d] + 1;
		o->value = k->val + 2 * (size_t)i;
		o->n_value = 2;
		o->value[0] = (int64_t)to_int64(s->count);
		o->value[1] = (int64_t)to_int64(s->value_ns);
		k->sp[i] = o;
	}
	pr->n_sample = fs->nst;
	pr->sample = k->sp;

	for (uint32_t i = 0; i < nm; i++) {
		PMapping *o = &k->m[k->new_id[i + 1] - 1];

		perftools__profiles__mapping__init(o);
		o->id = k->new_id[i + 1];
		o->filename = p->map[i].file;
		o->build_id = p->map[i].build;
		o->has_functions = 1;
		k->mp[o->id - 1] = o;
	}
	pr->n_mapping = nm;
	pr->mapping = k->mp;

	for (uint32_t i = 0; i < nl; i++) {
		perftools__profiles__location__init(&k->l[i]);
		perftools__profiles__line__init(&k->ln[i]);
		k->ln[i].function_id = p->loc[i].fn + 1;
		k->lnp[i] = &k->ln[i];
		k->l[i].id = i + 1;
		k->l[i].mapping_id = k->new_id[p->loc[i].map];
		k->l[i].n_line = 1;
		k->l[i].line = &k->lnp[i];
		k->lp[i] = &k->l[i];
	}
	pr->n_location = nl;
	pr->location = k->lp;

	for (uint32_t i = 0; i < p->nfn; i++) {
		perftools__profiles__function__init(&k->f[i]);
		k->f[i].id = i + 1;
		k->f[i].name = k->f[i].system_name = p->fn_name[i];
		k->fp[i] = &k->f[i];
	}
	pr->n_function = p->nfn;
	pr->function = k->fp;

	/* rtab keys are NUL-terminated: no copies. */
	for (uint32_t i = 0; i < nstr; i++)
		k->str[i] = (char *)rtab_str(&p->strings, i);
	pr->n_string_table = nstr;
	pr->string_table = k->str;

	pr->period_type = &k->vt[2];
	if (!fs->value_ns)
		pr->default_sample_type = p->s_samples;
	return 0;
}

static int pbc_encode(const struct fold_set *fs, struct pprof *p, struct pb *b)
{
	Perftools__Profiles__Profile pr;
	struct pbc_mem k = { 0 };
	int ret;

	perftools__profiles__profile__init(&pr);
	ret = pbc_build(fs, p, &k, &pr);
	if (ret == 0) {
		b->len = perftools__profiles__profile__get_packed_size(&pr);
		b->p = malloc(b->len ? b->len : 1);
		if (!b->p)
			ret = -ENOMEM;
		else
			perftools__profiles__profile__pack(&pr, b->p);
	}
	pbc_mem_free(&k);
	return ret;
}

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

struct result {
	double intern_ms, enc_ms, gz_ms;
	long rss_kb;
	size_t bytes, gz_bytes;
	uint32_t crc; /* of the raw bytes, to compare the two encoders */
	int ok;
};

static int write_file(const char *prefix, const char *what, const uint8_t *p, size_t len)
{
	char path[4096];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s.%s.pb.gz", prefix, what);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = fwrite(p, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/* In a child: build the set, then time one encoder on it. */
static void run_one(uint32_t n, int use_pbc, const char *write_prefix, struct result *r)
{
	struct fold_set *fs = make_set(n);
	struct pprof p = { 0 };
	struct pb b = { 0 };
	uint8_t *gz = NULL;
	long rss0;
	double t0, t1;

	if (!fs)
		return;
	rss0 = maxrss_kb();
	t0 = cpu_ms();
	if (pprof_intern(fs, bench_module, NULL, &p) < 0)
		goto out;
	t1 = cpu_ms();
	if ((use_pbc ? pbc_encode(fs, &p, &b) : encode(fs, NULL, &p, &b)) < 0)
		goto out;
	r->enc_ms = cpu_ms() - t1;
	r->intern_ms = t1 - t0;
	r->rss_kb = maxrss_kb() - rss0;
	r->bytes = b.len;
	r->crc = render_hash(b.p, b.len);
	t0 = cpu_ms();
	if (gzip_compress(b.p, b.len, GZIP_FASTEST, &gz, &r->gz_bytes) < 0)
		goto out;
	r->gz_ms = cpu_ms() - t0;
	r->ok = !write_prefix ||
		write_file(write_prefix, use_pbc ? "pbc" : "hand", gz, r->gz_bytes) == 0;
out:
	free(gz);
	free(b.p);
	pprof_release(&p);
	fold_set_free(fs);
}

static int run_child(uint32_t n, int use_pbc, const char *write_prefix, struct result *r)
{
	int fd[2], st;
	pid_t pid;
	ssize_t got;

	memset(r, 0, sizeof(*r));
	if (pipe(fd) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(fd[0]);
		run_one(n, use_pbc, write_prefix, r);
		_exit(write(fd[1], r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : 1);
	}
	close(fd[1]);
	got = read(fd[0], r, sizeof(*r));
	close(fd[0]);
	waitpid(pid, &st, 0);
	return got == (ssize_t)sizeof(*r) && r->ok ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	uint32_t ns[16] = { 10000, 100000, 1000000 };
	const char *write_prefix = NULL;
	int a = 1;
	size_t nn = 3;

	if (argc > 2 && strcmp(argv[1], "--write") == 0) {
		write_prefix = argv[2];
		a = 3;
	}
	if (a < argc)
		nn = 0;
	for (; a < argc && nn < 16; a++)
		ns[nn++] = (uint32_t)strtoul(argv[a], NULL, 10);
	printf("%-8s %-5s %9s %9s %10s %8s %9s %10s %5s\n", "stacks", "enc", "intern_ms",
	       "encode_ms", "raw_bytes", "rss_MiB", "gzip_ms", "gz_bytes", "same");
	for (size_t k = 0; k < nn; k++) {
		struct result r[2];

		for (int e = 0; e < 2; e++) {
			if (run_child(ns[k], e, k ? NULL : write_prefix, &r[e]) < 0) {
				fprintf(stderr, "pprof_bench: %u stacks, %s: failed\n", ns[k],
					e ? "protobuf-c" : "hand");
				return 1;
			}
		}
		for (int e = 0; e < 2; e++)
			printf("%-8u %-5s %9.1f %9.1f %10zu %8.1f %9.1f %10zu %5s\n", ns[k],
			       e ? "pbc" : "hand", r[e].intern_ms, r[e].enc_ms, r[e].bytes,
			       r[e].rss_kb / 1024.0, r[e].gz_ms, r[e].gz_bytes,
			       r[0].bytes == r[1].bytes && r[0].crc == r[1].crc ? "yes" : "NO");
		printf("%-8u pbc/hand: encode %.2fx, intern+encode %.2fx, +gzip %.2fx, "
		       "peak RSS growth %.2fx\n",
		       ns[k], r[1].enc_ms / (r[0].enc_ms > 0 ? r[0].enc_ms : 1e-3),
		       (r[1].enc_ms + r[1].intern_ms) / (r[0].enc_ms + r[0].intern_ms),
		       (r[1].enc_ms + r[1].intern_ms + r[1].gz_ms) /
			       (r[0].enc_ms + r[0].intern_ms + r[0].gz_ms),
		       (double)r[1].rss_kb / (r[0].rss_kb > 0 ? (double)r[0].rss_kb : 1.0));
	}
	return 0;
}
