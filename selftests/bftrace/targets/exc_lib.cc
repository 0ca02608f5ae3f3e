// SPDX-License-Identifier: GPL-2.0
/* libbftexc.so: exceptions thrown in it, and through it (exc_shape.h). */
#include <stdexcept>

#include "exc_lib.h"

#define TRACED __attribute__((noipa, used))

static volatile long lib_sink;

TRACED void ex_lib_thrower(int n)
{
	if (n == 0)
		throw std::runtime_error("lib");
	ex_lib_thrower(n - 1);
	lib_sink += n;	/* work after the call: never a tail call */
}

TRACED void ex_lib_relay(void (*cb)(void))
{
	cb();
	lib_sink++;
}
