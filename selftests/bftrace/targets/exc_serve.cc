// SPDX-License-Identifier: GPL-2.0
/*
 * A server-like C++ target for exc_linger_test: main waits for 'g', then
 * calls serve(), which stays on the stack handling one byte per line of
 * output.  'x' makes thrower() throw; the exception unwinds through
 * serve() and is caught in main.  So a return probe on serve(), entered
 * while traced, is still pending when tracing stops; the throw that comes
 * after the stop has to unwind through its hijacked return slot.
 *
 * Protocol (stdout): "ready", then "got C" for each byte C, then
 * "caught MESSAGE" and exit 0; exit 3 on a short read.
 */
#include <cstdio>
#include <stdexcept>
#include <unistd.h>

extern "C" __attribute__((noipa)) void thrower(int c)
{
	if (c == 'x')
		throw std::runtime_error("after the stop");
}

extern "C" __attribute__((noipa)) void serve(void)
{
	char c;

	while (read(0, &c, 1) == 1) {
		printf("got %c\n", c);
		fflush(stdout);
		thrower(c);
	}
}

int main(void)
{
	char go;

	setvbuf(stdout, nullptr, _IOLBF, 0);
	printf("ready\n");
	if (read(0, &go, 1) != 1)
		return 3;
	try {
		serve();
	} catch (const std::exception &e) {
		printf("caught %s\n", e.what());
		return 0;
	}
	return 3;
}
