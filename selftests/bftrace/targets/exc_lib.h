/* SPDX-License-Identifier: GPL-2.0 */
/* libbftexc.so: the exc target's other side of a library boundary. */
#ifndef BFT_EXC_LIB_H
#define BFT_EXC_LIB_H

/* Recurse n more times, then throw std::runtime_error("lib"). */
void ex_lib_thrower(int n);
/* Call cb, which throws through this library's frame. */
void ex_lib_relay(void (*cb)(void));

#endif /* BFT_EXC_LIB_H */
