// SPDX-License-Identifier: MIT
/*
 * cxx [SECONDS]: a C++ program whose hot leaves carry every kind of mangled
 * name a profiler must demangle, under frames that unwind through C++
 * personality/LSDA CFI (CIE augmentation "zPLR"), for SECONDS (default 2)
 * of CPU time.
 *
 * The leaves, one per kind (each noinline, each burning CPU in a loop):
 *   outer::inner::Klass<int>::method(int, int) namespaces + a class template;
 *     built (with -fwhole-program, so every function is local) so
 *     that GCC clones it (.constprop)
 *   outer::scale<double>(double)            a function template
 *   outer::sum_parts(outer::Parts const&)   a static function (internal
 *     linkage, "L" in the mangled name)
 *   (anonymous namespace)::hidden_work(int) an anonymous namespace
 *   the operator() of a lambda in run_lambda()
 *   leaf_work(int)                          plain, under with_cleanup(int)
 *
 * with_cleanup() holds an RAII object whose destructor must run if the
 * callee throws, so its FDE has an LSDA and its CIE a personality: the frames a DWARF unwinder must walk through to reach main.
 * Every round also throws and catches one exception.
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

volatile unsigned long cxx_sink;
/* Work per call, read at run time so no call site passes a constant. */
volatile int cxx_work = 200;

static double cpu_now()
{
	timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A macro, not a function: the leaves below are where the time goes,
 * with no inlined frame under them. */
#define BURN(n)                                                                \
	do {                                                                   \
		for (unsigned long i_ = 0; i_ < (unsigned long)(n); i_++) {    \
			cxx_sink += i_;                                        \
			__asm__ volatile("" ::: "memory");                     \
		}                                                              \
	} while (0)

namespace outer {
namespace inner {
template <typename T> struct Klass {
	T base;
	__attribute__((noinline)) T method(int rounds, int unused);
};

template <typename T> T Klass<T>::method(int rounds, int unused)
{
	BURN((unsigned long)rounds * 1000);
	return base + (T)rounds;
}

template struct Klass<int>;
} // namespace inner

struct Parts {
	long a, b;
	int n;
};

/* Internal linkage in a named namespace: mangled with an "L". */
static __attribute__((noinline)) long sum_parts(const Parts &p)
{
	BURN((unsigned long)p.n * 1000);
	return p.a + p.b;
}

template <typename T> __attribute__((noinline)) T scale(T x)
{
	BURN(200000);
	return x * (T)2;
}
} // namespace outer

namespace {
__attribute__((noinline)) int hidden_work(int n)
{
	BURN((unsigned long)n * 1000);
	return n + 1;
}
} // namespace

struct Guard {
	int *counter;
	explicit Guard(int *c) : counter(c) { ++*counter; }
	~Guard()
	{
		--*counter;
		BURN(1000);
	}
};

__attribute__((noinline)) int leaf_work(int n)
{
	BURN((unsigned long)n * 1000);
	if (n < 0)
		throw std::runtime_error("negative");
	return n;
}

static int guards;

__attribute__((noinline)) int with_cleanup(int n)
{
	Guard g(&guards);
	return leaf_work(n) + guards;
}

__attribute__((noinline)) int run_lambda(int n)
{
	int acc = 0;
	auto body = [&acc](int k) __attribute__((noinline)) {
		BURN((unsigned long)k * 1000);
		acc += k;
	};
	body(n);
	return acc;
}

__attribute__((noinline)) int thrower(int n)
{
	Guard g(&guards);
	if (n & 1)
		throw std::runtime_error("odd");
	return n;
}

__attribute__((noinline)) int round_once(int i)
{
	outer::inner::Klass<int> k{i};
	int r = 0;

	r += k.method(cxx_work, i);
	r += (int)outer::scale<double>((double)i);
	r += hidden_work(cxx_work);
	outer::Parts p = { i, 2 * i, cxx_work };
	r += (int)outer::sum_parts(p);
	r += run_lambda(cxx_work);
	r += with_cleanup(cxx_work);
	try {
		r += thrower(i);
	} catch (const std::exception &) {
		r += 1;
	}
	return r;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	double t0 = cpu_now();
	long r = 0;

	for (int i = 0; cpu_now() - t0 < secs; i++)
		r += round_once(i);
	cxx_sink += (unsigned long)r;
	return 0;
}
