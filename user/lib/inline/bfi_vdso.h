/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bfi_vdso: what the inline backend takes from a target's vDSO, found from
 * AT_SYSINFO_EHDR in /proc/PID/auxv and the vDSO image read from the
 * target (libelf's elf_memory): the clock the recorder calls, and a
 * `syscall` instruction system calls are run through.  tgid may be any
 * live thread's id: a leader that exited has no memory left to read.
 */
#ifndef BFI_VDSO_H
#define BFI_VDSO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The target's __vdso_clock_gettime in *addr; 0 with *addr = 0 when it
 * has no vDSO or no such symbol; -errno (err says why) when its auxv or
 * memory cannot be read.
 */
int bfi_vdso_clock(pid_t tgid, uint64_t *addr, char *err, size_t errlen);

/*
 * A `0f 05` byte pair in the target's vDSO text (the CPU decodes from
 * wherever rip points, so any offset serves); -ENOENT when there is none
 * or no vDSO, other -errno as bfi_vdso_clock.
 */
int bfi_vdso_syscall(pid_t tgid, uint64_t *addr, char *err, size_t errlen);

#endif /* BFI_VDSO_H */
