// SPDX-License-Identifier: MIT
/*
 * agent/unwind, continued (the snapshot and its reference unwind are the
 * fixture, unwind_fix.h): the cache's bounds and reuse, per-process state
 * (another binary at the same addresses in another "process", forgetting,
 * recycling, bins overflowing), PLT stubs and signal frames (CFI that
 * reads DWARF expressions out of .eh_frame), frames whose address sits on
 * a function boundary (where the lookup must be at the return address
 * minus 1, or exactly at a signal's IP), a leaf sampled in its epilogue,
 * and a small benchmark (printed, not asserted).
 *
 * Every stack handed to unwind_dwarf() is a heap block of exactly
 * stack_size bytes, so under ASan a read past the copy is caught.
 */
#include "tests/unit/unwind_fix.h"

/* ---- the cache ---- */

static void test_cache_bounds(void **state)
{
	struct unwind_cache *c = unwind_cache_new(1);
	uint64_t ips[MAX_FRAMES], loads;
	struct sample_buf b;

	errno = 0;
	assert_null(unwind_cache_new(0));
	assert_int_equal(errno, EINVAL);
	unwind_cache_free(NULL);
	unwind_cache_forget(NULL, 1, 2);

	/* One entry for a stack through several binaries: right, then trimmed. */
	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_int_equal(unwind_cache_entries(c), 1);
	loads = unwind_cache_loads(c);
	assert_true(loads >= 2); /* the test, libcmocka, libc */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_true(unwind_cache_loads(c) > loads); /* evicted, so read again */
	unwind_cache_free(c);

	/* Forgetting a binary makes the next unwind read it again, once. */
	c = unwind_cache_new(16);
	assert_non_null(c);
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	loads = unwind_cache_loads(c);
	assert_int_equal(unwind_cache_entries(c), loads);
	unwind_cache_forget(c, maps_self_exe(&self_maps)->dev, maps_self_exe(&self_maps)->ino);
	assert_int_equal(unwind_cache_entries(c), loads - 1);
	unwind_cache_forget(c, 12345, 67890); /* unknown: nothing happens */
	assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
	assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
	assert_int_equal(unwind_cache_loads(c), loads + 1);
	sample_release(&b);
	unwind_cache_free(c);
}

static void test_cache_reuse_and_speed(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	uint64_t ips[MAX_FRAMES], loads, fills;
	struct sample_buf b;
	const int rounds = 10000;
	double t0, dt;

	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	/* Without a process (tables cached), then with one (its rules cached too). */
	for (uint32_t pid = 0; pid < 2; pid++) {
		b.s.pid = pid;
		assert_int_equal(unwind_dwarf(c, &b.s, ips, MAX_FRAMES), full_n);
		loads = unwind_cache_loads(c);
		fills = unwind_cache_rule_fills(c);
		t0 = now();
		for (int i = 0; i < rounds; i++)
			if (unwind_dwarf(c, &b.s, ips, MAX_FRAMES) != full_n)
				fail_msg("round %d: chain changed", i);
		dt = now() - t0;
		assert_memory_equal(ips, full_ips, (size_t)full_n * sizeof(ips[0]));
		/* The whole point of the cache: no file read after the first unwind. */
		assert_int_equal(unwind_cache_loads(c), loads);
		/* Nor any FDE read: every frame's rows were cached the first time. */
		assert_int_equal(unwind_cache_rule_fills(c), fills);
		print_message("unwind (%s): %d unwinds of %d frames in %.3f s: %.0f unwinds/s, "
			      "%.2f us/frame\n", pid ? "one process" : "no pid", rounds, full_n, dt,
			      rounds / dt, dt * 1e6 / rounds / full_n);
	}
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- per-process address spaces ---- */

/*
 * This test's mappings, with its own executable's replaced by another
 * binary (chain-nofp) at the very same addresses: another process, same
 * layout, different code. What that makes of the snapshot, computed without
 * a pid (nothing cached), goes in ref/ref_n.
 */
struct other_proc {
	char *path;
	struct test_maps maps;
	uint64_t ref[MAX_FRAMES];
	int ref_n;
};

static void other_setup(struct other_proc *o)
{
	struct unwind_cache *c = unwind_cache_new(16);
	struct sample_buf b;
	struct stat st;

	assert_non_null(c);
	o->path = sibling_workload("chain-nofp");
	assert_int_equal(stat(o->path, &st), 0);
	maps_redirect(&o->maps, &self_maps, o->path, st.st_dev, st.st_ino);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o->maps);
	o->ref_n = unwind_dwarf(c, &b.s, o->ref, MAX_FRAMES);
	assert_in_range(o->ref_n, 1, MAX_FRAMES);
	assert_int_equal(o->ref[0], full_ips[0]);
	/* Or the test below could not tell the two apart. */
	assert_false(o->ref_n == full_n &&
		     !memcmp(o->ref, full_ips, (size_t)full_n * sizeof(full_ips[0])));
	sample_release(&b);
	unwind_cache_free(c);
}

static void other_release(struct other_proc *o)
{
	maps_free(&o->maps);
	free(o->path);
}


static void test_process_spaces(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	struct other_proc o;
	struct counted_maps ca = { .tm = &self_maps }, cb;
	struct sample_buf a, b;
	uint64_t fills;

	assert_non_null(c);
	other_setup(&o);
	cb = (struct counted_maps){ .tm = &o.maps };
	sample_make(&a, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	a.s.find_map = counted_find;
	a.s.ctx = &ca;
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o.maps);
	b.s.find_map = counted_find;
	b.s.ctx = &cb;

	/* Process 100 runs this test; the second time every step is a cache hit. */
	expect_unwind(c, &a, 100, full_ips, full_n);
	ca.calls = 0;
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_int_equal(ca.calls, 0);

	/*
	 * Process 300 is a fork of 100: the same binaries at the same addresses.
	 * It asks find_map for its own mappings, but reads no FDE again.
	 */
	fills = unwind_cache_rule_fills(c);
	assert_true(fills >= (uint64_t)full_n - 1);
	ca.calls = 0;
	expect_unwind(c, &a, 300, full_ips, full_n);
	assert_true(ca.calls > 0);
	assert_int_equal(unwind_cache_rule_fills(c), fills);

	/* Process 200 has the other binary at the same addresses: none of 100's rules. */
	expect_unwind(c, &b, 200, o.ref, o.ref_n);
	expect_unwind(c, &b, 200, o.ref, o.ref_n);
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_int_equal(unwind_cache_processes(c), 3);
	unwind_forget_process(c, 300);
	assert_int_equal(unwind_cache_processes(c), 2);
	/* Nor do samples without a pid use them. */
	expect_unwind(c, &b, 0, o.ref, o.ref_n);

	/* Process 100 execs the other binary: forgotten, then unwound as that one. */
	unwind_forget_process(c, 100);
	assert_int_equal(unwind_cache_processes(c), 1);
	expect_unwind(c, &b, 100, o.ref, o.ref_n);
	/* And back (a new exec, or pid 100 reused). */
	unwind_forget_process(c, 100);
	ca.calls = 0;
	expect_unwind(c, &a, 100, full_ips, full_n);
	assert_true(ca.calls > 0); /* asked afresh */
	expect_unwind(c, &b, 200, o.ref, o.ref_n);

	/* Unknown pids, pid 0 and no cache: nothing happens. */
	unwind_forget_process(c, 12345);
	unwind_forget_process(c, 0);
	unwind_forget_process(NULL, 100);
	assert_int_equal(unwind_cache_processes(c), 2);
	assert_int_equal(unwind_cache_processes(NULL), 0);

	sample_release(&a);
	sample_release(&b);
	other_release(&o);
	unwind_cache_free(c);
}

static void test_process_lru(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	struct other_proc o;
	struct sample_buf a, b;

	assert_non_null(c);
	other_setup(&o);
	sample_make(&a, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size, &o.maps);

	/* More processes than spaces: the least recently unwound are recycled. */
	for (uint32_t pid = 1; pid <= 150; pid++)
		expect_unwind(c, &a, pid, full_ips, full_n);
	assert_int_equal(unwind_cache_processes(c), 64);
	/* A recycled space keeps nothing of its last process: 1000 runs the other binary. */
	expect_unwind(c, &b, 1000, o.ref, o.ref_n);
	assert_int_equal(unwind_cache_processes(c), 64);
	for (uint32_t pid = 1; pid <= 150; pid += 7)
		expect_unwind(c, &a, pid, full_ips, full_n);
	expect_unwind(c, &b, 1000, o.ref, o.ref_n);
	for (uint32_t pid = 1; pid <= 150; pid++)
		unwind_forget_process(c, pid);
	assert_int_equal(unwind_cache_processes(c), 1);

	sample_release(&a);
	sample_release(&b);
	other_release(&o);
	unwind_cache_free(c);
}

/* Runtime address of this executable's first PLT entry (after PLT0). */
static uint64_t self_plt_entry(void)
{
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	int fd = open(exe->path, O_RDONLY | O_CLOEXEC);
	uint64_t addr = 0;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".plt") || sh.sh_size < 32)
			continue;
		/* The executable mapping holding that file offset. */
		for (size_t i = 0; i < self_maps.n; i++) {
			const struct unwind_map *m = &self_maps.v[i];

			if (m->dev == exe->dev && m->ino == exe->ino && sh.sh_offset >= m->pgoff &&
			    sh.sh_offset + 16 - m->pgoff < m->end - m->start)
				addr = m->start + (sh.sh_offset - m->pgoff) + 16;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(addr != 0);
	return addr;
}

/*
 * @b: the snapshot entering this executable's PLT stub from chain_leaf
 * (the return address one past the snapshot's IP: same rules), with the
 * frames an unwind of it gives in @want (full_n + 1 of them).
 */
static void plt_sample(struct sample_buf *b, uint64_t *want, struct test_maps *maps)
{
	uint64_t regs[NREGS], ret = snap.regs[PERF_REG_X86_IP] + 1;
	size_t size = snap.stack_size + 8;
	uint8_t *stack = malloc(size);

	assert_non_null(stack);
	memcpy(regs, snap.regs, sizeof(regs));
	regs[PERF_REG_X86_IP] = self_plt_entry();
	regs[PERF_REG_X86_SP] -= 8;
	memcpy(stack, &ret, 8);
	memcpy(stack + 8, snap.stack, snap.stack_size);
	want[0] = regs[PERF_REG_X86_IP];
	want[1] = ret;
	memcpy(want + 2, full_ips + 1, (size_t)(full_n - 1) * sizeof(want[0]));
	sample_make(b, regs, unwind_dwarf_regs_mask(), stack, size, maps);
	free(stack);
}

/*
 * A sample taken in a PLT stub called from chain_leaf. The linker's CFI
 * for .plt computes the CFA with a DWARF expression that sits in .eh_frame,
 * outside every executable mapping: a step served from the rule cache
 * (which never looks the FDE up) must still read it.
 */
static void test_process_plt_expression(void **state)
{
	uint64_t want[MAX_FRAMES];
	struct unwind_cache *c = unwind_cache_new(64), *tiny = unwind_cache_new(1);
	struct counted_maps cm = { .tm = &self_maps };
	struct sample_buf b;

	assert_non_null(c);
	assert_non_null(tiny);
	plt_sample(&b, want, &self_maps);
	b.s.find_map = counted_find;
	b.s.ctx = &cm;

	expect_unwind(c, &b, 0, want, full_n + 1);
	expect_unwind(c, &b, 7, want, full_n + 1);
	cm.calls = 0;
	expect_unwind(c, &b, 7, want, full_n + 1); /* from the rule cache */
	assert_int_equal(cm.calls, 0);

	/*
	 * A cache of one binary evicts this executable's tables after every
	 * unwind: the rules pointing into them must go with them.
	 */
	for (int i = 0; i < 3; i++)
		expect_unwind(tiny, &b, 7, want, full_n + 1);

	sample_release(&b);
	unwind_cache_free(tiny);
	unwind_cache_free(c);
}

/* @src with every executable mapping cut into 4 KiB mappings of the same file. */
static void maps_paged(struct test_maps *dst, const struct test_maps *src)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++) {
		const struct unwind_map *m = &src->v[i];

		for (uint64_t a = m->start; a < m->end; a += 4096) {
			dst->v = realloc(dst->v, (dst->n + 1) * sizeof(*dst->v));
			assert_non_null(dst->v);
			dst->v[dst->n] = *m;
			dst->v[dst->n].start = a;
			dst->v[dst->n].end = a + 4096 < m->end ? a + 4096 : m->end;
			dst->v[dst->n].pgoff = m->pgoff + (a - m->start);
			dst->v[dst->n++].path = strdup(m->path);
		}
	}
}

/*
 * A process that has met more mappings than its space remembers: the rules
 * of the ones it drops must go too. The PLT rule reads its expression from
 * this executable's .eh_frame; after 40 other mappings no bin holds that.
 */
static void test_process_bins_overflow(void **state)
{
	uint64_t regs[NREGS], want[MAX_FRAMES], leaf[8];
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	size_t far = 0;
	struct unwind_cache *c = unwind_cache_new(64);
	struct test_maps paged;
	struct sample_buf b;

	assert_non_null(c);
	maps_paged(&paged, &self_maps);
	plt_sample(&b, want, &paged);
	expect_unwind(c, &b, 9, want, full_n + 1);
	sample_release(&b);

	/* 40 leaf-only samples in 40 pages of other binaries. */
	for (size_t i = 0; i < paged.n && far < 40; i++) {
		if (paged.v[i].dev == exe->dev && paged.v[i].ino == exe->ino)
			continue;
		memcpy(regs, snap.regs, sizeof(regs));
		regs[PERF_REG_X86_IP] = paged.v[i].start + 64;
		sample_make(&b, regs, unwind_dwarf_regs_mask(), snap.stack, 0, &paged);
		b.s.pid = 9;
		assert_int_equal(unwind_dwarf(c, &b.s, leaf, 8), 1);
		sample_release(&b);
		far++;
	}
	assert_int_equal(far, 40);

	/* The PLT sample again, in the same process. */
	plt_sample(&b, want, &paged);
	expect_unwind(c, &b, 9, want, full_n + 1);
	sample_release(&b);
	maps_free(&paged);
	unwind_cache_free(c);
}

/* A binary forgotten (changed on disk) leaves no rules behind in any process. */
static void test_process_binary_forget(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	const struct unwind_map *exe = maps_self_exe(&self_maps);
	struct sample_buf b;
	uint64_t loads;

	assert_non_null(c);
	sample_make(&b, snap.regs, unwind_dwarf_regs_mask(), snap.stack, snap.stack_size,
		    &self_maps);
	expect_unwind(c, &b, 5, full_ips, full_n);
	expect_unwind(c, &b, 6, full_ips, full_n);
	loads = unwind_cache_loads(c);
	unwind_cache_forget(c, exe->dev, exe->ino);
	/* Both processes read the tables again (once), rather than trust old rules. */
	expect_unwind(c, &b, 5, full_ips, full_n);
	expect_unwind(c, &b, 6, full_ips, full_n);
	assert_int_equal(unwind_cache_loads(c), loads + 1);
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- through a signal frame ---- */

static uint64_t sig_restorer;     /* the handler's return address: the trampoline */
static uint64_t sig_caller_ret;   /* where sig_caller returns to */
static volatile int sig_seen;

NOFP static void sig_handler(int sig)
{
	SMASH_RBP(JUNK_RBP + 4);
	sig_restorer = (uintptr_t)__builtin_return_address(0);
	sig_seen = chain_leaf(sig); /* not a tail call: keep this frame */
}

NOFP static int sig_caller(int sig)
{
	SMASH_RBP(JUNK_RBP + 5);
	sig_caller_ret = (uintptr_t)__builtin_return_address(0);
	return raise(sig) + 1;
}

/*
 * A sample in a signal handler: the unwind goes through the kernel's
 * signal frame (__restore_rt's CFI: DWARF expressions over the saved
 * ucontext, and an 'S' CIE, after which the interrupted IP is taken as is)
 * back into the code that raised the signal. With rows cached, then for
 * another process sharing them.
 */
static void test_signal_frame(void **state)
{
	struct unwind_cache *c = unwind_cache_new(64);
	static struct snapshot saved, sig;
	struct sigaction sa = { .sa_handler = sig_handler }, old;
	uint64_t first[MAX_FRAMES];
	struct sample_buf b;
	int n, k;

	assert_non_null(c);
	saved = snap; /* the other tests' snapshot */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	assert_int_equal(sig_caller(SIGUSR1), 1);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	sig = snap;
	snap = saved;
	assert_true(sig.stack_size > 256);

	sample_make(&b, sig.regs, unwind_dwarf_regs_mask(), sig.stack, sig.stack_size, &self_maps);
	n = unwind_dwarf(c, &b.s, first, MAX_FRAMES);
	print_message("unwind: %d frames through a signal frame\n", n);
	for (int i = 0; i < n; i++) {
		const struct unwind_map *m = maps_find(&self_maps, first[i]);

		print_message("  #%-2d %#" PRIx64 " %s+%#" PRIx64 "\n", i, first[i],
			      m ? m->path : "?", m ? first[i] - m->start + m->pgoff : 0);
	}
	assert_true(n >= 5);
	assert_int_equal(first[0], sig.regs[PERF_REG_X86_IP]);
	assert_int_equal(first[1], sig.ret[0]);      /* chain_leaf -> sig_handler */
	assert_int_equal(first[2], sig_restorer);    /* sig_handler -> __restore_rt */
	/* Past the signal frame, through libc's raise(), back to sig_caller's caller. */
	for (k = 3; k < n && first[k] != sig_caller_ret; k++)
		;
	assert_true(k < n);

	for (uint32_t pid = 0; pid < 3; pid++)
		expect_unwind(c, &b, pid, first, n);
	sample_release(&b);
	unwind_cache_free(c);
}

/* ---- frames whose address sits on a function boundary ---- */

/*
 * Hand-made functions, so the layout is known. test_bnd_pre ends in a row
 * whose CFA is RSP + 16; test_bnd_ud2 starts right after it with a ud2:
 * the SIGILL it raises is reported at test_bnd_ud2 itself, and only an
 * exact lookup (after a signal frame) finds its rows, not the previous
 * function's. test_bnd_call ends with a call that never returns, so its
 * return address is test_bnd_next, the first byte of the next function:
 * only a lookup at the address minus 1 finds the caller's rows.
 */
void test_bnd_ud2(void);
void test_bnd_call(void);
void test_bnd_next(void);
void test_bnd_noreturn(void) __attribute__((noreturn));
uint64_t test_bnd_call_ret;

__asm__(".text\n"
	".type test_bnd_pre, @function\n"
	"test_bnd_pre:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	"	nop\n"
	".cfi_endproc\n"
	".size test_bnd_pre, .-test_bnd_pre\n"
	".globl test_bnd_ud2\n"
	".hidden test_bnd_ud2\n"
	".type test_bnd_ud2, @function\n"
	"test_bnd_ud2:\n"
	".cfi_startproc\n"
	"	ud2\n"
	".cfi_endproc\n"
	".size test_bnd_ud2, .-test_bnd_ud2\n"
	".globl test_bnd_call\n"
	".hidden test_bnd_call\n"
	".type test_bnd_call, @function\n"
	"test_bnd_call:\n"
	".cfi_startproc\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, test_bnd_call_ret(%rip)\n"
	"	subq $24, %rsp\n"
	"	.cfi_adjust_cfa_offset 24\n"
	"	call test_bnd_noreturn\n"
	".cfi_endproc\n"
	".size test_bnd_call, .-test_bnd_call\n"
	".globl test_bnd_next\n"
	".hidden test_bnd_next\n"
	".type test_bnd_next, @function\n"
	"test_bnd_next:\n"
	".cfi_startproc\n"
	"	ret\n"
	".cfi_endproc\n"
	".size test_bnd_next, .-test_bnd_next\n");

static sigjmp_buf bnd_jmp;
static uint64_t bnd_restorer, bnd_ud2_ret;

NOFP static void bnd_sigill(int sig)
{
	SMASH_RBP(JUNK_RBP + 6);
	bnd_restorer = (uintptr_t)__builtin_return_address(0);
	sig_seen = chain_leaf(sig);
	siglongjmp(bnd_jmp, 1);
}

NOFP static void bnd_ud2_caller(void)
{
	SMASH_RBP(JUNK_RBP + 7);
	bnd_ud2_ret = (uintptr_t)__builtin_return_address(0);
	test_bnd_ud2();
	sig_seen++;
}

NOFP void test_bnd_noreturn(void)
{
	SMASH_RBP(JUNK_RBP + 8);
	sig_seen = chain_leaf(0);
	siglongjmp(bnd_jmp, 1);
}


static void test_function_boundaries(void **state)
{
	struct sigaction sa = { .sa_handler = bnd_sigill }, old;
	static struct snapshot saved, sn;
	uint64_t ips[MAX_FRAMES];
	int n, k;

	saved = snap;

	/* A fault on a function's first byte: after the signal frame, that very address. */
	assert_int_equal(sigaction(SIGILL, &sa, &old), 0);
	if (!sigsetjmp(bnd_jmp, 1))
		bnd_ud2_caller();
	assert_int_equal(sigaction(SIGILL, &old, NULL), 0);
	sn = snap;
	n = unwind_twice(&sn, ips);
	assert_true(n >= 6);
	assert_int_equal(ips[1], sn.ret[0]);     /* chain_leaf -> bnd_sigill */
	assert_int_equal(ips[2], bnd_restorer); /* bnd_sigill -> __restore_rt */
	assert_int_equal(ips[3], (uintptr_t)test_bnd_ud2);
	/* ips[4] is in bnd_ud2_caller; then its caller. */
	assert_int_equal(ips[5], bnd_ud2_ret);

	/* A call as a function's last instruction: the return address is the next function. */
	if (!sigsetjmp(bnd_jmp, 1))
		test_bnd_call();
	sn = snap;
	n = unwind_twice(&sn, ips);
	assert_true(n >= 5);
	assert_int_equal(ips[1], sn.ret[0]); /* chain_leaf -> test_bnd_noreturn */
	assert_int_equal(ips[2], (uintptr_t)test_bnd_next);
	for (k = 3; k < n && ips[k] != test_bnd_call_ret; k++)
		;
	assert_int_equal(k, 3);

	snap = saved;
}

/* ---- a leaf sampled in its epilogue ---- */

/*
 * epi_leaf(regs, ret) keeps a frame pointer, records the registers it
 * would show at an interrupt on its final `ret` (after `pop %rbp`, when its
 * CFI still says "RBP saved at CFA-16", a slot now below SP), and the
 * return address; epi_caller, with a frame pointer and so a CFA of RBP+16,
 * makes the copy. Without the live RBP the walk stops at epi_caller.
 */
__asm__(".text\n"
	".type epi_leaf, @function\n"
	"epi_leaf:\n"
	".cfi_startproc\n"
	"pushq %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"movq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"movq %rbx, 8(%rdi)\n"
	"movq %r12, 160(%rdi)\n"
	"movq %r13, 168(%rdi)\n"
	"movq %r14, 176(%rdi)\n"
	"movq %r15, 184(%rdi)\n"
	"movq 8(%rsp), %rax\n"
	"movq %rax, (%rsi)\n"
	"leaq 16(%rsp), %rax\n"
	"movq %rax, 56(%rdi)\n" /* SP at the ret: the return address's slot */
	"subq $8, 56(%rdi)\n"
	"popq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"movq %rbp, 48(%rdi)\n"
	".globl test_epi_ret\n"
	".hidden test_epi_ret\n"
	"test_epi_ret:\n"
	"ret\n"
	".cfi_endproc\n"
	".size epi_leaf, .-epi_leaf\n");
void epi_leaf(uint64_t *regs, uint64_t *ret);
extern const char test_epi_ret[];

static struct snapshot epi;

__attribute__((noinline, noclone, optimize("no-omit-frame-pointer"))) static void epi_caller(void)
{
	uint64_t caller_sp;

	memset(&epi, 0, sizeof(epi));
	epi_leaf(epi.regs, &epi.ret[0]);
	epi.ret[1] = (uintptr_t)__builtin_return_address(0);
	epi.regs[PERF_REG_X86_IP] = (uintptr_t)test_epi_ret;
	/* Our frame is intact (we are in it); the return address's slot was reused. */
	caller_sp = epi.regs[PERF_REG_X86_SP] + 8;
	epi.stack_size = 8 + copy_stack(epi.stack + 8, caller_sp, STACK_COPY - 8);
	memcpy(epi.stack, &epi.ret[0], 8);
}

static void test_epilogue_leaf(void **state)
{
	struct unwind_cache *c = unwind_cache_new(16);
	uint64_t ips[MAX_FRAMES];
	struct sample_buf b;
	int n;

	assert_non_null(c);
	epi_caller();
	assert_true(epi.stack_size > 256);
	sample_make(&b, epi.regs, unwind_dwarf_regs_mask(), epi.stack, epi.stack_size,
		    &self_maps);
	n = unwind_dwarf(c, &b.s, ips, MAX_FRAMES);
	assert_true(n >= 3);
	assert_int_equal(ips[0], (uintptr_t)test_epi_ret);
	assert_int_equal(ips[1], epi.ret[0]); /* epi_leaf -> epi_caller */
	assert_int_equal(ips[2], epi.ret[1]); /* epi_caller -> this test, through the live RBP */

	sample_release(&b);
	unwind_cache_free(c);
}

/* fixture_chain takes the snapshot the others use: keep it first. */
TL_MAIN_GROUP(group_setup, group_teardown, fixture_chain, test_cache_bounds,
	test_cache_reuse_and_speed, test_process_spaces, test_process_lru, test_process_plt_expression,
	test_process_bins_overflow, test_process_binary_forget, test_signal_frame,
	test_function_boundaries, test_epilogue_leaf)
