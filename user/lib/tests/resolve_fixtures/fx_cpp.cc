// SPDX-License-Identifier: GPL-2.0
/*
 * The C++ fixture: namespaces, a class with overloads, a template, a
 * virtual.  Modes as fx_main.c: bytes, work N, (none).
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define FX_FN __attribute__((noipa))

volatile int fx_sink;

namespace ns {

FX_FN int add(int a, int b) { return a + b; }
FX_FN double add(double a, double b) { return a + b; }

template <class T> FX_FN T twice(T v) { return v + v; }
template int twice<int>(int);

class Shape {
public:
	virtual ~Shape() {}
	virtual int area() const = 0;
};

class Square : public Shape {
	int side;
public:
	FX_FN explicit Square(int s) : side(s) {}
	FX_FN int area() const override { return side * side; }
	FX_FN int scale(int k) { return side *= k; }
	FX_FN int scale(double k) { return side = static_cast<int>(side * k); }
};

} // namespace ns

static void wait_usr1()
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigwait(&set, &sig);
}

static void work(long n)
{
	ns::Square sq(2);
	const ns::Shape *sh = &sq;

	for (long i = 0; i < n; i++) {
		fx_sink += ns::add((int)i, 1);
		if (i % 2 == 0)
			fx_sink += (int)ns::add(1.5, (double)i);
		fx_sink += ns::twice<int>((int)i);
		sq.scale(1);
		if (i % 4 == 0)
			sq.scale(1.0);
		fx_sink += sh->area();
	}
}

static void dump(const char *name, const void *fn)
{
	const unsigned char *p = static_cast<const unsigned char *>(fn);

	std::printf("%s ", name);
	for (int i = 0; i < 16; i++)
		std::printf("%02x", p[i]);
	std::printf("\n");
}

int main(int argc, char **argv)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, nullptr);
	if (argc > 1 && !std::strcmp(argv[1], "bytes")) {
		dump("ns::add(int, int)", reinterpret_cast<const void *>(
			static_cast<int (*)(int, int)>(ns::add)));
		dump("ns::add(double, double)", reinterpret_cast<const void *>(
			static_cast<double (*)(double, double)>(ns::add)));
		dump("ns::twice<int>(int)", reinterpret_cast<const void *>(
			&ns::twice<int>));
		return 0;
	}
	if (argc > 2 && !std::strcmp(argv[1], "work")) {
		std::printf("ready %d\n", (int)getpid());
		std::fflush(stdout);
		wait_usr1();
		work(std::atol(argv[2]));
		std::printf("done\n");
		std::fflush(stdout);
		wait_usr1();
		return 0;
	}
	work(1);
	return 0;
}
