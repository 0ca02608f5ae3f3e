/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bft_rings: read the per-CPU record streams of /dev/bftrace.
 *
 * One file descriptor per CPU ring, opened O_NONBLOCK and bound with
 * BFT_IOC_BIND_CPU.  A CPU that has no ring (the bind answers -ENODEV) is
 * skipped.  read() returns whole records only (bftrace.h section 2), so the
 * bytes of one CPU, concatenated in read order, are its stream; no record
 * straddles two chunks.
 *
 * The data goes either to a callback, chunk by chunk as read, or, when no
 * callback is given, onto the end of a growable per-CPU buffer that the
 * caller inspects with bft_rings_data() and empties with
 * bft_rings_consume().
 *
 * A read() that returns 0 marks the ring "at end" (bft_rings_at_end): it is
 * no longer polled, so a ring that reports readable with nothing to give
 * cannot make the poll loop spin.  bft_rings_rearm() polls them again (after
 * BFT_CMD_START following a stop).
 *
 * Conventions: 0 / non-negative counts or -errno; after a failure
 * bft_rings_errmsg() says why.
 */
#ifndef BFT_RINGS_H
#define BFT_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bft_rings;

/* cpu: the ring's CPU; data/len: whole records; return non-zero to stop. */
typedef int (*bft_rings_cb)(unsigned int cpu, const void *data, size_t len,
			    void *arg);

/*
 * Open and bind one reader per CPU 0..nr_cpus-1.  nr_cpus 0 means the
 * possible CPUs of this machine (/sys/devices/system/cpu/possible, else
 * sysconf); pass caps.nr_cpus from bft_nl_get_caps() when you have it.
 * dev is the device path, NULL for "/dev/bftrace".
 *   -ENOENT  no device ("is bftrace.ko loaded?")
 *   -EBUSY   a CPU's ring already has a reader
 *   -ENODEV  no CPU has a ring
 * On failure *rp is NULL and the reason is copied into err (may be NULL).
 */
int bft_rings_open(struct bft_rings **rp, const char *dev,
		   unsigned int nr_cpus, char *err, size_t errlen);
void bft_rings_close(struct bft_rings *r);
const char *bft_rings_errmsg(const struct bft_rings *r);

/* CPUs asked for (slots 0..n-1), and how many of them have a bound ring. */
unsigned int bft_rings_nr_cpus(const struct bft_rings *r);
unsigned int bft_rings_nr_bound(const struct bft_rings *r);
bool bft_rings_bound(const struct bft_rings *r, unsigned int cpu);
bool bft_rings_at_end(const struct bft_rings *r, unsigned int cpu);
void bft_rings_rearm(struct bft_rings *r);

/*
 * One descriptor (an epoll set of the rings bft_rings_poll() would look at)
 * that a caller's own poll loop can wait on: readable when a ring is, by
 * the same rule (a watermark's worth, or sealed by the flush timer).  Then
 * call bft_rings_poll() with timeout 0.  It is created on the first call,
 * follows at_end and bft_rings_rearm(), and is closed with the rings.
 * -errno if it cannot be made.
 */
int bft_rings_wait_fd(struct bft_rings *r);

/*
 * A descriptor of the device (the first bound ring's), for ioctls that
 * any /dev/bftrace file answers, such as BFT_IOC_STATUS; -1 if none.
 * It stays the rings': do not close it.
 */
int bft_rings_dev_fd(const struct bft_rings *r);

/* Total bytes read from the CPU's ring since open. */
uint64_t bft_rings_bytes_read(const struct bft_rings *r, unsigned int cpu);

/*
 * One step of a poll loop: wait up to timeout_ms (-1 forever, 0 not at all)
 * until a ring is readable, then read every readable ring until it would
 * block or has given 1 MiB (so one busy ring cannot starve the others; the
 * next step reads on).  Returns the bytes read (0 on timeout) or -errno; a callback's
 * non-zero return ends the step and is returned if negative (-ECANCELED
 * if positive).  cb NULL: append to the per-CPU buffers.
 */
ssize_t bft_rings_poll(struct bft_rings *r, int timeout_ms, bft_rings_cb cb,
		       void *arg);

/*
 * Read everything until the rings stay idle: return once no ring gave a
 * byte for quiet_ms in a row.  Choose quiet_ms above BFT_OPT_FLUSH_MS, or
 * data the flush timer has yet to seal is missed.  max_ms (-1: no limit)
 * bounds the whole call: -ETIME if the rings never went quiet.  Reads
 * regardless of poll()'s watermark.  Returns the bytes read or -errno.
 */
ssize_t bft_rings_drain(struct bft_rings *r, int quiet_ms, int max_ms,
			bft_rings_cb cb, void *arg);

/* The CPU's buffered bytes (cb NULL mode), and dropping the first n. */
const uint8_t *bft_rings_data(const struct bft_rings *r, unsigned int cpu,
			      size_t *len);
void bft_rings_consume(struct bft_rings *r, unsigned int cpu, size_t n);

#endif /* BFT_RINGS_H */
