// SPDX-License-Identifier: GPL-2.0
/*
 * A C++ program that throws, for bft_hooks' tests: built dynamic (fx_exc)
 * and static with every symbol stripped but its own functions
 * (fx_exc_stripped: an unwinder that cannot be named).  Modes:
 *   (none)   throw and catch once, print "caught"
 *   wait     print "ready", then wait for a byte (or EOF) on stdin
 */
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

__attribute__((noipa)) void fx_exc_thrower(int x)
{
	if (x > 0)
		throw std::runtime_error("fx_exc");
}

__attribute__((noipa)) int fx_exc_catcher(int x)
{
	try {
		fx_exc_thrower(x);
	} catch (const std::exception &e) {
		return std::puts("caught") < 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	char c;

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		std::puts("ready");
		std::fflush(stdout);
		return read(0, &c, 1) < 0;
	}
	return fx_exc_catcher(argc);
}
