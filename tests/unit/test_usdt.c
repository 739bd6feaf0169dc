// SPDX-License-Identifier: MIT
/*
 * agent/usdt: SDT notes, argument specs, argument values (synthetic ELF
 * files are test_usdt_syn.c; the fixture is usdt_fix.h).
 *
 * Expected answers never come from usdt itself: register numbers are
 * written out here, values are worked out by hand, and facts about real
 * binaries come from reading them independently with libelf (program
 * headers, section headers, .symtab). Fixtures: tables of argument specs
 * and register names; the sdtprobe workload ($BUILD/workloads, -O1 -g) and
 * corrupted and truncated copies of it; PostgreSQL's server binary; files
 * without notes and files that are not ELF.
 */
#include "tests/unit/usdt_fix.h"

/* ---- argument specs ---- */

struct arg_case {
	const char *spec;
	enum usdt_arg_kind kind;
	int size, is_signed;
	int64_t value;
	int reg, reg_bytes;
};

static const struct arg_case good_args[] = {
	{ "-4@%eax", USDT_ARG_REG, 4, 1, 0, PERF_REG_X86_AX, 4 },
	{ "8@%rax", USDT_ARG_REG, 8, 0, 0, PERF_REG_X86_AX, 8 },
	{ "-8@%rdi", USDT_ARG_REG, 8, 1, 0, PERF_REG_X86_DI, 8 },
	{ "1@%dil", USDT_ARG_REG, 1, 0, 0, PERF_REG_X86_DI, 1 },
	{ "-2@%r9w", USDT_ARG_REG, 2, 1, 0, PERF_REG_X86_R9, 2 },
	{ "-4@%r14d", USDT_ARG_REG, 4, 1, 0, PERF_REG_X86_R14, 4 },
	{ "1@%r8b", USDT_ARG_REG, 1, 0, 0, PERF_REG_X86_R8, 1 },
	{ "8@%r15", USDT_ARG_REG, 8, 0, 0, PERF_REG_X86_R15, 8 },
	{ "2@%sp", USDT_ARG_REG, 2, 0, 0, PERF_REG_X86_SP, 2 },
	{ "8@%rip", USDT_ARG_REG, 8, 0, 0, PERF_REG_X86_IP, 8 },
	{ "%rsi", USDT_ARG_REG, 8, 0, 0, PERF_REG_X86_SI, 8 },
	{ "%eax", USDT_ARG_REG, 8, 0, 0, PERF_REG_X86_AX, 4 },
	{ "-4@$1", USDT_ARG_CONST, 4, 1, 1, 0, 0 },
	{ "-4@$0", USDT_ARG_CONST, 4, 1, 0, 0, 0 },
	{ "-4@$-7", USDT_ARG_CONST, 4, 1, -7, 0, 0 },
	{ "8@$0x10", USDT_ARG_CONST, 8, 0, 16, 0, 0 },
	{ "8@$0XfF", USDT_ARG_CONST, 8, 0, 255, 0, 0 },
	{ "8@$-0x10", USDT_ARG_CONST, 8, 0, -16, 0, 0 },
	{ "8@$0xffffffffffffffff", USDT_ARG_CONST, 8, 0, -1, 0, 0 },
	{ "8@$18446744073709551615", USDT_ARG_CONST, 8, 0, -1, 0, 0 },
	{ "-8@$9223372036854775807", USDT_ARG_CONST, 8, 1, INT64_MAX, 0, 0 },
	{ "-8@$-9223372036854775808", USDT_ARG_CONST, 8, 1, INT64_MIN, 0, 0 },
	{ "$5", USDT_ARG_CONST, 8, 0, 5, 0, 0 },
	{ "-4@-20(%rbp)", USDT_ARG_MEM, 4, 1, -20, PERF_REG_X86_BP, 8 },
	{ "8@8(%r13)", USDT_ARG_MEM, 8, 0, 8, PERF_REG_X86_R13, 8 },
	{ "8@0(%r13)", USDT_ARG_MEM, 8, 0, 0, PERF_REG_X86_R13, 8 },
	{ "8@(%r12)", USDT_ARG_MEM, 8, 0, 0, PERF_REG_X86_R12, 8 },
	{ "-4@0x10(%rsp)", USDT_ARG_MEM, 4, 1, 16, PERF_REG_X86_SP, 8 },
	{ "4@-0x10(%eax)", USDT_ARG_MEM, 4, 0, -16, PERF_REG_X86_AX, 4 },
	{ "1@-132(%rbp)", USDT_ARG_MEM, 1, 0, -132, PERF_REG_X86_BP, 8 },
	{ "-2@60(%rax)", USDT_ARG_MEM, 2, 1, 60, PERF_REG_X86_AX, 8 },
	{ "16(%rdi)", USDT_ARG_MEM, 8, 0, 16, PERF_REG_X86_DI, 8 },
	{ "(%rdi)", USDT_ARG_MEM, 8, 0, 0, PERF_REG_X86_DI, 8 },
};

static const char *const bad_args[] = {
	"", "@", "8@", "-4@", "-", "8", "4@eax", "eax",
	/* sizes */
	"3@%eax", "16@%rax", "0@%rax", "--4@%eax", "+4@%eax", "-@%eax", "44@%eax", "4 @%eax",
	/* floats */
	"8f@%xmm0", "4f@-8(%rbp)", "-8f@$1",
	/* registers */
	"-4@%ah", "1@%bh", "%ch", "1@%dh", "8@%rzz", "8@%", "8@%%rax", "8@%RAX", "8@%r16",
	"8@%r8l", "8@%ip", "8@%xmm0", "8@%fs", "8@%eflags", "8@%rax@x", "8@%rax ", " 8@%rax",
	"8@%rax)", "8@%rax,",
	/* globals, %rip-relative, index forms */
	"-4@NBuffers(%rip)", "-4@40+CheckpointStats(%rip)", "8@16(%rip)", "8@(%rip)",
	"8@-8(%eip)", "8@(%rax,%rdx,8)", "8@8(%rax,%rdx)", "8@(,%rax,8)", "8@%fs:8",
	"8@sym", "8@sym+8",
	/* constants */
	"8@$", "8@$x", "8@$1x", "8@$010", "8@$0x", "8@$0xg", "8@$--1", "8@$+1", "8@$ 1",
	"8@$18446744073709551616", "8@$-9223372036854775809", "8@$0x10000000000000000",
	"8@$1(%rax)",
	/* memory */
	"8@-(%rax)", "8@0x(%rax)", "8@5", "8@5(%rax", "8@(%rax))", "8@(%rax)x", "8@()", "8@(%)",
	"8@(rax)", "8@( %rax)", "8@(%ah)", "8@+8(%rax)", "8@08(%rax)",
};

static void test_parse_good(void **state)
{
	for (size_t i = 0; i < sizeof(good_args) / sizeof(good_args[0]); i++) {
		const struct arg_case *c = &good_args[i];
		struct usdt_arg a;

		memset(&a, 0x5a, sizeof(a));
		if (usdt_parse_arg(c->spec, &a) != 0)
			fail_msg("\"%s\" rejected", c->spec);
		if (a.kind != c->kind || a.size != c->size || !!a.is_signed != c->is_signed ||
		    a.value != c->value)
			fail_msg("\"%s\": kind %d size %d signed %d value %lld", c->spec, a.kind, a.size,
				 a.is_signed, (long long)a.value);
		if (c->kind != USDT_ARG_CONST && (a.reg != c->reg || a.reg_bytes != c->reg_bytes))
			fail_msg("\"%s\": reg %d bytes %d", c->spec, a.reg, a.reg_bytes);
	}
}

static void test_parse_bad(void **state)
{
	struct usdt_arg a, orig;

	memset(&orig, 0x5a, sizeof(orig));
	for (size_t i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++) {
		a = orig;
		if (usdt_parse_arg(bad_args[i], &a) != -EINVAL)
			fail_msg("\"%s\" accepted", bad_args[i]);
		/* out is written only on success */
		assert_memory_equal(&a, &orig, sizeof(a));
	}
	assert_int_equal(usdt_parse_arg(NULL, &a), -EINVAL);
	assert_int_equal(usdt_parse_arg("8@%rax", NULL), -EINVAL);
}

/* ---- registers ---- */

struct reg_case {
	const char *name;
	int reg, bytes;
};

static const struct reg_case legacy_regs[] = {
	{ "rax", PERF_REG_X86_AX, 8 }, { "eax", PERF_REG_X86_AX, 4 },
	{ "ax", PERF_REG_X86_AX, 2 },  { "al", PERF_REG_X86_AX, 1 },
	{ "rbx", PERF_REG_X86_BX, 8 }, { "ebx", PERF_REG_X86_BX, 4 },
	{ "bx", PERF_REG_X86_BX, 2 },  { "bl", PERF_REG_X86_BX, 1 },
	{ "rcx", PERF_REG_X86_CX, 8 }, { "ecx", PERF_REG_X86_CX, 4 },
	{ "cx", PERF_REG_X86_CX, 2 },  { "cl", PERF_REG_X86_CX, 1 },
	{ "rdx", PERF_REG_X86_DX, 8 }, { "edx", PERF_REG_X86_DX, 4 },
	{ "dx", PERF_REG_X86_DX, 2 },  { "dl", PERF_REG_X86_DX, 1 },
	{ "rsi", PERF_REG_X86_SI, 8 }, { "esi", PERF_REG_X86_SI, 4 },
	{ "si", PERF_REG_X86_SI, 2 },  { "sil", PERF_REG_X86_SI, 1 },
	{ "rdi", PERF_REG_X86_DI, 8 }, { "edi", PERF_REG_X86_DI, 4 },
	{ "di", PERF_REG_X86_DI, 2 },  { "dil", PERF_REG_X86_DI, 1 },
	{ "rbp", PERF_REG_X86_BP, 8 }, { "ebp", PERF_REG_X86_BP, 4 },
	{ "bp", PERF_REG_X86_BP, 2 },  { "bpl", PERF_REG_X86_BP, 1 },
	{ "rsp", PERF_REG_X86_SP, 8 }, { "esp", PERF_REG_X86_SP, 4 },
	{ "sp", PERF_REG_X86_SP, 2 },  { "spl", PERF_REG_X86_SP, 1 },
	{ "rip", PERF_REG_X86_IP, 8 }, { "eip", PERF_REG_X86_IP, 4 },
};

static const char *const bad_regs[] = {
	"", "%", "%%rax", "ah", "bh", "ch", "dh", "%ah", "r16", "r7", "r8l", "r8q", "r08",
	"xmm0", "RAX", "Rax", "fs", "cs", "ip", "eflags", "rflags", "rax ", " rax", "raxx",
	"r", "e", "r1", "r15x",
};

static void check_reg(const char *name, int want_reg, int want_bytes)
{
	int reg = -1, bytes = -1;

	if (usdt_reg_lookup(name, &reg, &bytes) != 0)
		fail_msg("%s rejected", name);
	if (reg != want_reg || bytes != want_bytes)
		fail_msg("%s: reg %d bytes %d, want %d %d", name, reg, bytes, want_reg, want_bytes);
}

static void test_regs(void **state)
{
	char name[16];
	int reg = 77, bytes = 77;

	for (size_t i = 0; i < sizeof(legacy_regs) / sizeof(legacy_regs[0]); i++) {
		check_reg(legacy_regs[i].name, legacy_regs[i].reg, legacy_regs[i].bytes);
		tl_pathf(name, sizeof(name), "%%%s", legacy_regs[i].name);
		check_reg(name, legacy_regs[i].reg, legacy_regs[i].bytes);
	}
	/* r8..r15 with their d, w, b forms; PERF_REG_X86_R8.. are consecutive */
	for (int n = 8; n <= 15; n++) {
		static const struct {
			const char *suffix;
			int bytes;
		} forms[] = { { "", 8 }, { "d", 4 }, { "w", 2 }, { "b", 1 } };

		for (size_t f = 0; f < 4; f++) {
			tl_pathf(name, sizeof(name), "r%d%s", n, forms[f].suffix);
			check_reg(name, PERF_REG_X86_R8 + n - 8, forms[f].bytes);
			tl_pathf(name, sizeof(name), "%%r%d%s", n, forms[f].suffix);
			check_reg(name, PERF_REG_X86_R8 + n - 8, forms[f].bytes);
		}
	}
	for (size_t i = 0; i < sizeof(bad_regs) / sizeof(bad_regs[0]); i++) {
		if (usdt_reg_lookup(bad_regs[i], &reg, &bytes) != -EINVAL)
			fail_msg("\"%s\" accepted", bad_regs[i]);
		assert_int_equal(reg, 77);
		assert_int_equal(bytes, 77);
	}
	assert_int_equal(usdt_reg_lookup(NULL, &reg, &bytes), -EINVAL);
	/* outputs are optional */
	assert_int_equal(usdt_reg_lookup("r9w", NULL, NULL), 0);
}

/* ---- argument values ---- */

struct value_case {
	const char *spec;
	int reg;      /* register to set, -1 for none */
	uint64_t regval;
	int64_t want;
};

static const struct value_case reg_values[] = {
	{ "-4@%eax", PERF_REG_X86_AX, 0xffffffffull, -1 },
	{ "-4@%eax", PERF_REG_X86_AX, 0x12345678fffffffeull, -2 },
	{ "-4@%eax", PERF_REG_X86_AX, 0x7fffffffull, INT32_MAX },
	{ "-4@%eax", PERF_REG_X86_AX, 0x80000000ull, INT32_MIN },
	{ "4@%eax", PERF_REG_X86_AX, 0xffffffffffffffffull, 0xffffffffll },
	{ "-1@%al", PERF_REG_X86_AX, 0x180, -128 },
	{ "1@%al", PERF_REG_X86_AX, 0x180, 0x80 },
	{ "-2@%ax", PERF_REG_X86_AX, 0x18000, -32768 },
	{ "2@%ax", PERF_REG_X86_AX, 0x18000, 0x8000 },
	{ "-8@%rax", PERF_REG_X86_AX, 0xfffffffffffffff0ull, -16 },
	{ "8@%rax", PERF_REG_X86_AX, 0xfffffffffffffff0ull, -16 }, /* same bits */
	{ "-4@%r14d", PERF_REG_X86_R14, 0xaaaaaaaa80000001ull, -2147483647 },
	{ "1@%r8b", PERF_REG_X86_R8, 0x1234, 0x34 },
	{ "-1@%dil", PERF_REG_X86_DI, 0xff, -1 },
	/* a 4-byte register read as 8 bytes: the upper half is zero */
	{ "%eax", PERF_REG_X86_AX, 0xffffffff80000000ull, 0x80000000ll },
	{ "-8@%eax", PERF_REG_X86_AX, 0xffffffff80000000ull, 0x80000000ll },
	/* the size cuts a wider register */
	{ "-1@%rax", PERF_REG_X86_AX, 0x12345680, -128 },
	{ "8@%rip", PERF_REG_X86_IP, 0x401000, 0x401000 },
	{ "-4@$-7", -1, 0, -7 },
	{ "4@$-1", -1, 0, 0xffffffffll },
	{ "1@$300", -1, 0, 44 },
	{ "-1@$200", -1, 0, -56 },
	{ "-2@$0x8000", -1, 0, -32768 },
	{ "8@$0xffffffffffffffff", -1, 0, -1 },
	{ "-8@$-9223372036854775808", -1, 0, INT64_MIN },
};

static void test_values_reg(void **state)
{
	for (size_t i = 0; i < sizeof(reg_values) / sizeof(reg_values[0]); i++) {
		const struct value_case *c = &reg_values[i];
		uint64_t regs[PERF_REG_X86_64_MAX];
		uint64_t valid = 0;
		struct usdt_arg a;
		int64_t v = 12345;

		/* poison every other register */
		for (size_t r = 0; r < PERF_REG_X86_64_MAX; r++)
			regs[r] = 0xdeadbeefdeadbeefull;
		if (c->reg >= 0) {
			regs[c->reg] = c->regval;
			valid = 1ull << c->reg;
		}
		assert_int_equal(usdt_parse_arg(c->spec, &a), 0);
		assert_int_equal(usdt_arg_value(&a, regs, valid, NULL, NULL, &v), 0);
		if (v != c->want)
			fail_msg("%s with %#llx: %lld, want %lld", c->spec,
				 (unsigned long long)c->regval, (long long)v, (long long)c->want);

		if (c->reg >= 0) {
			/* register not sampled: -ENOENT, @out untouched */
			v = 12345;
			assert_int_equal(usdt_arg_value(&a, regs, ~valid, NULL, NULL, &v), -ENOENT);
			assert_true(v == 12345);
		} else {
			/* constants need no registers */
			assert_int_equal(usdt_arg_value(&a, NULL, 0, NULL, NULL, &v), 0);
			assert_true(v == c->want);
		}
	}
}

/* memory of a fake process: MEM_BASE.. holds mem_bytes */
#define MEM_BASE 0x7000ull

static const uint8_t mem_bytes[32] = {
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* 0x7000 */
	0xff, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, /* 0x7008 */
	0xfe, 0xff, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x80, /* 0x7010 */
	0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11, 0x22, /* 0x7018 */
};

struct fake_mem {
	int calls;
	uint64_t last_addr;
	size_t last_len;
	int fail; /* returned instead of reading when nonzero */
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake_mem *m = ctx;

	m->calls++;
	m->last_addr = addr;
	m->last_len = len;
	if (m->fail)
		return m->fail;
	if (addr < MEM_BASE || addr - MEM_BASE > sizeof(mem_bytes) ||
	    sizeof(mem_bytes) - (addr - MEM_BASE) < len)
		return -EFAULT;
	memcpy(buf, mem_bytes + (addr - MEM_BASE), len);
	return 0;
}

struct mem_case {
	const char *spec;
	int reg;
	uint64_t regval, addr;
	int64_t want;
};

static const struct mem_case mem_values[] = {
	{ "8@(%rbx)", PERF_REG_X86_BX, 0x7000, 0x7000, 0x0807060504030201ll },
	{ "-4@-8(%rbp)", PERF_REG_X86_BP, 0x7010, 0x7008, -1 },
	{ "4@-8(%rbp)", PERF_REG_X86_BP, 0x7010, 0x7008, 0xffffffffll },
	{ "-4@12(%rsp)", PERF_REG_X86_SP, 0x7000, 0x700c, 0x80 },
	{ "1@3(%r12)", PERF_REG_X86_R12, 0x7000, 0x7003, 0x04 },
	{ "-1@0xc(%r12)", PERF_REG_X86_R12, 0x7000, 0x700c, -128 },
	{ "-2@0x10(%rdi)", PERF_REG_X86_DI, 0x7000, 0x7010, -2 },
	{ "2@0x10(%rdi)", PERF_REG_X86_DI, 0x7000, 0x7010, 0xfffe },
	{ "-8@0x10(%rdi)", PERF_REG_X86_DI, 0x7000, 0x7010, (int64_t)0x80000000007ffffeull },
	{ "8@24(%rax)", PERF_REG_X86_AX, 0x7000, 0x7018, 0x2211ffeeddccbbaall },
	/* a 4-byte base register: its upper half is not part of the address */
	{ "4@-0x10(%eax)", PERF_REG_X86_AX, 0xffffffff00007010ull, 0x7000, 0x04030201 },
	/* offsets wrap like the CPU's address arithmetic */
	{ "1@0xffffffffffffffff(%rcx)", PERF_REG_X86_CX, 0x7001, 0x7000, 0x01 },
};

static void test_values_mem(void **state)
{
	for (size_t i = 0; i < sizeof(mem_values) / sizeof(mem_values[0]); i++) {
		const struct mem_case *c = &mem_values[i];
		uint64_t regs[PERF_REG_X86_64_MAX] = { 0 };
		struct fake_mem m = { 0 };
		struct usdt_arg a;
		int64_t v = 12345;

		regs[c->reg] = c->regval;
		assert_int_equal(usdt_parse_arg(c->spec, &a), 0);
		assert_int_equal(usdt_arg_value(&a, regs, 1ull << c->reg, fake_read, &m, &v), 0);
		assert_int_equal(m.calls, 1);
		assert_int_equal(m.last_len, (size_t)a.size);
		if (m.last_addr != c->addr || v != c->want)
			fail_msg("%s with %#llx: read %#llx = %lld, want %#llx = %lld", c->spec,
				 (unsigned long long)c->regval, (unsigned long long)m.last_addr,
				 (long long)v, (unsigned long long)c->addr, (long long)c->want);

		/* the reader's error comes back, @out untouched */
		m.fail = -EFAULT;
		v = 12345;
		assert_int_equal(usdt_arg_value(&a, regs, 1ull << c->reg, fake_read, &m, &v), -EFAULT);
		assert_true(v == 12345);
		m.fail = -ESRCH;
		assert_int_equal(usdt_arg_value(&a, regs, 1ull << c->reg, fake_read, &m, &v), -ESRCH);
		/* a reader breaking its contract is still an error */
		m.fail = 1;
		assert_int_equal(usdt_arg_value(&a, regs, 1ull << c->reg, fake_read, &m, &v), -EIO);
		/* base register not sampled: the reader is not called */
		m.calls = 0;
		assert_int_equal(usdt_arg_value(&a, regs, 0, fake_read, &m, &v), -ENOENT);
		assert_int_equal(m.calls, 0);
		/* no reader */
		assert_int_equal(usdt_arg_value(&a, regs, 1ull << c->reg, NULL, NULL, &v), -EINVAL);
		assert_true(v == 12345);
	}
}

static void test_values_bad(void **state)
{
	uint64_t regs[PERF_REG_X86_64_MAX] = { 0 };
	struct usdt_arg a, ok;
	int64_t v = 5;

	assert_int_equal(usdt_parse_arg("-4@%eax", &ok), 0);
	assert_int_equal(usdt_arg_value(NULL, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	assert_int_equal(usdt_arg_value(&ok, regs, ~0ull, NULL, NULL, NULL), -EINVAL);
	/* valid bit set but no register array */
	assert_int_equal(usdt_arg_value(&ok, NULL, ~0ull, NULL, NULL, &v), -EINVAL);

	a = ok;
	a.size = 3;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	a = ok;
	a.size = 16;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	a = ok;
	a.reg = 64;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	a = ok;
	a.reg = -1;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	a = ok;
	a.reg_bytes = 0;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	a = ok;
	a.kind = (enum usdt_arg_kind)7;
	assert_int_equal(usdt_arg_value(&a, regs, ~0ull, NULL, NULL, &v), -EINVAL);
	assert_true(v == 5);
}

/* ---- the sdtprobe workload ---- */

static void test_workload(void **state)
{
	char path[PATH_MAX];
	const struct usdt_probe *hit, *mem;
	struct usdt_list *l;
	struct elf_view v;
	unsigned char *bytes;
	size_t len;
	GElf_Shdr probes;
	GElf_Sym sym;

	sdtprobe_path(path, sizeof(path));
	bytes = read_all(path, &len);
	l = usdt_read(path);
	assert_non_null(l);
	assert_sane(l, len);
	assert_int_equal(usdt_count(l), 2);
	assert_int_equal(usdt_skipped(l), 0);
	hit = usdt_find(l, "cgperf_test", "hit");
	mem = usdt_find(l, "cgperf_test", "mem");
	assert_non_null(hit);
	assert_non_null(mem);
	print_message("hit: pc_off %#llx sema_off %#llx args \"%s\"\n",
		      (unsigned long long)hit->pc_off, (unsigned long long)hit->sema_off, hit->arg_spec);
	print_message("mem: pc_off %#llx sema_off %#llx args \"%s\"\n",
		      (unsigned long long)mem->pc_off, (unsigned long long)mem->sema_off, mem->arg_spec);

	/* hit(long i, int -7, unsigned char): constraint "nr" */
	assert_int_equal(hit->nargs, 3);
	assert_int_equal(hit->args[0].kind, USDT_ARG_REG);
	assert_int_equal(hit->args[0].size, 8);
	assert_true(hit->args[0].is_signed);
	assert_int_equal(hit->args[0].reg_bytes, 8);
	assert_int_equal(hit->args[1].kind, USDT_ARG_CONST);
	assert_int_equal(hit->args[1].size, 4);
	assert_true(hit->args[1].is_signed);
	assert_true(hit->args[1].value == -7);
	assert_int_equal(hit->args[2].kind, USDT_ARG_REG);
	assert_int_equal(hit->args[2].size, 1);
	assert_false(hit->args[2].is_signed);
	assert_int_equal(hit->args[2].reg_bytes, 1);

	/* mem(int, unsigned char, unsigned long): constraint "m", a stack slot */
	assert_int_equal(mem->nargs, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(mem->args[i].kind, USDT_ARG_MEM);
		assert_true(mem->args[i].reg == PERF_REG_X86_SP || mem->args[i].reg == PERF_REG_X86_BP);
		assert_int_equal(mem->args[i].reg_bytes, 8);
	}
	assert_int_equal(mem->args[0].size, 4);
	assert_true(mem->args[0].is_signed);
	assert_int_equal(mem->args[1].size, 1);
	assert_false(mem->args[1].is_signed);
	assert_int_equal(mem->args[2].size, 8);
	assert_false(mem->args[2].is_signed);
	/* the fields of one struct, in order, 4 bytes apart then 4 more */
	assert_true(mem->args[1].value - mem->args[0].value == 4);
	assert_true(mem->args[2].value - mem->args[0].value == 8);

	/* checked against the file's own headers and symbols */
	ev_open(&v, path);
	for (const struct usdt_probe *p = hit; p; p = p == hit ? mem : NULL) {
		char sname[64];

		/* the probe site is a NOP inside fire() */
		assert_true(ev_in_exec_load(&v, p->pc_off));
		assert_int_equal(bytes[p->pc_off], 0x90);
		assert_true(ev_symbol(&v, "fire", &sym));
		assert_true(p->pc_vaddr >= sym.st_value && p->pc_vaddr < sym.st_value + sym.st_size);

		/* the semaphore is its symbol, in .probes, initially 0 */
		tl_pathf(sname, sizeof(sname), "cgperf_test_%s_semaphore", p->name);
		assert_true(ev_symbol(&v, sname, &sym));
		assert_int_equal(p->sema_vaddr, sym.st_value);
		assert_true(ev_section(&v, ".probes", &probes));
		assert_int_equal(probes.sh_type, SHT_PROGBITS);
		assert_int_equal(p->sema_off, probes.sh_offset + (sym.st_value - probes.sh_addr));
		assert_int_equal(bytes[p->sema_off], 0);
		assert_int_equal(bytes[p->sema_off + 1], 0);
	}
	/* a PIE's data is not at its own offset: the test means something */
	assert_int_not_equal(probes.sh_offset, probes.sh_addr);
	assert_int_not_equal(hit->sema_off, mem->sema_off);
	ev_close(&v);
	usdt_free(l);
	free(bytes);
}

/* ---- PostgreSQL ---- */

static void test_postgres(void **state)
{
	const struct usdt_probe *p;
	struct usdt_list *l;
	struct elf_view v;
	unsigned char *bytes;
	size_t len, n, unparsed = 0, sites = 0;
	GElf_Shdr probes;

	if (access(POSTGRES, R_OK) != 0) {
		print_message("%s missing: PostgreSQL 15 not installed\n", POSTGRES);
		skip();
	}
	bytes = read_all(POSTGRES, &len);
	l = usdt_read(POSTGRES);
	assert_non_null(l);
	assert_sane(l, len);
	n = usdt_count(l);
	print_message("%zu probes, %zu skipped\n", n, usdt_skipped(l));
	assert_true(n > 50);
	assert_int_equal(usdt_skipped(l), 0);

	p = usdt_find(l, "postgresql", "query__start");
	assert_non_null(p);
	assert_int_not_equal(p->sema_off, 0);
	assert_int_equal(p->nargs, 1);
	assert_int_equal(p->args[0].size, 8);
	assert_non_null(usdt_find(l, "postgresql", "transaction__start"));
	assert_null(usdt_find(l, "postgresql", "no__such__probe"));

	ev_open(&v, POSTGRES);
	assert_true(ev_section(&v, ".probes", &probes));
	for (size_t i = 0; i < n; i++) {
		p = usdt_get(l, i);
		assert_string_equal(p->provider, "postgresql");
		if (i < 6 || strcmp(p->name, "query__start") == 0)
			print_message("  %s:%s pc_off %#llx sema_off %#llx args \"%s\" (%d)\n",
				      p->provider, p->name, (unsigned long long)p->pc_off,
				      (unsigned long long)p->sema_off, p->arg_spec, p->nargs);
		/* USDT sites are NOPs in executable code */
		assert_true(ev_in_exec_load(&v, p->pc_off));
		assert_int_equal(bytes[p->pc_off], 0x90);
		/* every PostgreSQL probe has a semaphore, in .probes */
		assert_true(p->sema_off >= probes.sh_offset &&
			    p->sema_off + 2 <= probes.sh_offset + probes.sh_size);
		assert_int_equal(p->sema_off - probes.sh_offset, p->sema_vaddr - probes.sh_addr);
		/* the only specs left unparsed are globals (%rip-relative) */
		if (p->nargs == 0 && p->arg_spec[0]) {
			print_message("  unparsed: %s \"%s\"\n", p->name, p->arg_spec);
			assert_non_null(strstr(p->arg_spec, "(%rip)"));
			unparsed++;
		}
	}
	assert_true(unparsed < n / 4);

	/* a probe in code that is repeated has several sites */
	for (p = usdt_find(l, "postgresql", "lwlock__wait__start"); p;
	     p = usdt_find_next(l, p, "postgresql", "lwlock__wait__start"))
		sites++;
	print_message("lwlock__wait__start: %zu sites\n", sites);
	assert_true(sites >= 1);
	ev_close(&v);
	usdt_free(l);
	free(bytes);
}

/* ---- files without notes, files that are not ELF ---- */

static void test_no_notes(void **state)
{
	const char *files[] = { "/bin/true", NULL };
	char writer[PATH_MAX];

	tl_pathf(writer, sizeof(writer), "%s/workloads/writer", tf_build_dir());
	files[1] = writer;
	for (size_t i = 0; i < 2; i++) {
		struct usdt_list *l;

		print_message("%s\n", files[i]);
		assert_int_equal(access(files[i], R_OK), 0);
		l = usdt_read(files[i]);
		assert_non_null(l);
		assert_int_equal(usdt_count(l), 0);
		assert_int_equal(usdt_skipped(l), 0);
		assert_null(usdt_get(l, 0));
		assert_null(usdt_find(l, "p", "n"));
		usdt_free(l);
	}
	/* NULL is an empty list everywhere */
	assert_int_equal(usdt_count(NULL), 0);
	assert_int_equal(usdt_skipped(NULL), 0);
	assert_null(usdt_get(NULL, 0));
	assert_null(usdt_find(NULL, "p", "n"));
	usdt_free(NULL);
}

static void expect_fail(const char *path, int err)
{
	print_message("%s\n", path);
	errno = 0;
	assert_null(usdt_read(path));
	assert_int_equal(errno, err);
}

static void test_not_elf(void **state)
{
	char *dir = tl_tmpdir("cgperf-usdt");
	char path[PATH_MAX];

	tl_pathf(path, sizeof(path), "%s/text", dir);
	write_file(path, "#!/bin/sh\necho hello\n", 21);
	expect_fail(path, ENOEXEC);
	tl_pathf(path, sizeof(path), "%s/empty", dir);
	write_file(path, "", 0);
	expect_fail(path, ENOEXEC);
	tl_pathf(path, sizeof(path), "%s/magic-only", dir);
	write_file(path, "\177ELF", 4);
	expect_fail(path, ENOEXEC);
	tl_pathf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_fail(path, ENOEXEC); /* and does not hang */
	expect_fail(dir, ENOEXEC);
	expect_fail("/dev/null", ENOEXEC);
	tl_pathf(path, sizeof(path), "%s/missing", dir);
	expect_fail(path, ENOENT);
	expect_fail(NULL, EINVAL);
	tl_rmtree(dir);
}

/* ---- corrupted and truncated copies of sdtprobe ---- */

/* .note.stapsdt of a 64-bit little-endian image, found by hand */
static Elf64_Shdr *find_note_shdr(unsigned char *elf, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	Elf64_Shdr *sh, *strs;

	assert_true(eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
	sh = (Elf64_Shdr *)(elf + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	for (size_t i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_NOTE &&
		    strcmp((char *)elf + strs->sh_offset + sh[i].sh_name, ".note.stapsdt") == 0)
			return &sh[i];
	fail_msg("no .note.stapsdt");
	return NULL;
}

/* usdt_read() on @path: fails cleanly or gives a sane list */
static void read_any(const char *path, size_t len)
{
	struct usdt_list *l = usdt_read(path);

	if (l) {
		assert_sane(l, len);
		usdt_free(l);
	}
}

static void test_corrupt(void **state)
{
	char orig[PATH_MAX], path[PATH_MAX];
	char *dir = tl_tmpdir("cgperf-usdt");
	unsigned char *bytes, *copy;
	size_t len;
	Elf64_Shdr *note;
	uint64_t noff, nsize;
	uint32_t x = 12345;
	struct usdt_list *l;

	sdtprobe_path(orig, sizeof(orig));
	bytes = read_all(orig, &len);
	copy = malloc(len);
	assert_non_null(copy);
	assert_int_equal(bytes[EI_CLASS], ELFCLASS64);
	note = find_note_shdr(bytes, len);
	noff = note->sh_offset;
	nsize = note->sh_size;
	tl_pathf(path, sizeof(path), "%s/bad", dir);

	/* targeted: the first note's header and descriptor */
	{
		static const struct {
			const char *what;
			size_t at; /* offset into the note section */
			uint32_t value;
			size_t expect; /* probes left, SIZE_MAX: any */
		} hits[] = {
			{ "namesz huge", 0, 0xffffffffu, 0 },
			{ "namesz 0", 0, 0, SIZE_MAX },
			{ "descsz huge", 4, 0xffffffffu, 0 },
			{ "descsz past the section", 4, 0x200, 0 },
			{ "descsz 0", 4, 0, SIZE_MAX },
			{ "descsz 23", 4, 23, SIZE_MAX },
			{ "descsz 26", 4, 26, SIZE_MAX },
			{ "type 0", 8, 0, 1 },
			{ "owner", 12, 0x41414141u, 1 },
			{ "pc low", 20, 0, 1 },
			{ "pc high", 24, 0x7fffffffu, 1 },
			{ "semaphore high", 40, 0x7fffffffu, 1 },
		};

		for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
			memcpy(copy, bytes, len);
			memcpy(copy + noff + hits[i].at, &hits[i].value, 4);
			write_file(path, copy, len);
			print_message("corruption: %s\n", hits[i].what);
			l = usdt_read(path);
			assert_non_null(l);
			assert_sane(l, len);
			if (hits[i].expect != SIZE_MAX)
				assert_int_equal(usdt_count(l), hits[i].expect);
			usdt_free(l);
		}
	}

	/* every NUL of the note section's strings turned into 'A' */
	memcpy(copy, bytes, len);
	for (size_t i = 20 + 24; i < nsize; i++)
		if (copy[noff + i] == 0)
			copy[noff + i] = 'A';
	write_file(path, copy, len);
	read_any(path, len);

	/* the section header: size and offset past the end of the file */
	{
		Elf64_Shdr *sh;

		memcpy(copy, bytes, len);
		sh = find_note_shdr(copy, len);
		sh->sh_size = len;
		write_file(path, copy, len);
		read_any(path, len);
		sh->sh_size = nsize;
		sh->sh_offset = len - 4;
		write_file(path, copy, len);
		read_any(path, len);
		sh->sh_offset = UINT64_MAX - 8;
		write_file(path, copy, len);
		read_any(path, len);
		sh->sh_offset = noff;
		sh->sh_name = 0x7fffffff;
		write_file(path, copy, len);
		l = usdt_read(path);
		assert_non_null(l);
		assert_int_equal(usdt_count(l), 0);
		usdt_free(l);
	}

	/* the ELF header: section and program header tables out of reach */
	{
		static const struct {
			const char *what;
			size_t at, size;
			uint64_t value;
		} hdr[] = {
			{ "e_shstrndx", offsetof(Elf64_Ehdr, e_shstrndx), 2, 0xfffe },
			{ "e_shnum", offsetof(Elf64_Ehdr, e_shnum), 2, 0xffff },
			{ "e_shoff", offsetof(Elf64_Ehdr, e_shoff), 8, 0xfffffffffff0ull },
			{ "e_phoff", offsetof(Elf64_Ehdr, e_phoff), 8, 0xfffffffffff0ull },
			{ "e_phnum", offsetof(Elf64_Ehdr, e_phnum), 2, 0xffff },
			{ "e_phentsize", offsetof(Elf64_Ehdr, e_phentsize), 2, 3 },
			{ "e_shentsize", offsetof(Elf64_Ehdr, e_shentsize), 2, 3 },
			{ "class", EI_CLASS, 1, 7 },
		};

		for (size_t i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++) {
			memcpy(copy, bytes, len);
			memcpy(copy + hdr[i].at, &hdr[i].value, hdr[i].size);
			write_file(path, copy, len);
			print_message("corruption: %s\n", hdr[i].what);
			read_any(path, len);
		}
	}

	/* random bytes into the notes (most rounds) and the headers */
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, bytes, len);
		for (int k = 0; k < 6; k++) {
			size_t where;

			x = x * 1103515245u + 12345u;
			if (k % 3 == 2 && round % 4 == 0)
				where = (x >> 8) % 64;
			else
				where = noff + (x >> 8) % nsize;
			x = x * 1103515245u + 12345u;
			copy[where] = (unsigned char)(x >> 16);
		}
		write_file(path, copy, len);
		read_any(path, len);
	}

	/* truncated anywhere, and especially inside the notes */
	for (size_t cut = 0; cut < len; cut += 97) {
		write_file(path, bytes, cut);
		read_any(path, cut);
	}
	for (size_t cut = noff; cut <= noff + nsize && cut < len; cut++) {
		write_file(path, bytes, cut);
		read_any(path, cut);
	}
	free(copy);
	free(bytes);
	tl_rmtree(dir);
}

TL_MAIN(test_parse_good, test_parse_bad, test_regs, test_values_reg, test_values_mem,
	test_values_bad, test_workload, test_postgres, test_no_notes, test_not_elf, test_corrupt)
