/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * bftrace: the contract between bftrace.ko and user space.
 *
 * Two channels cross the boundary:
 *
 *   1. The generic netlink family "bftrace" (BFT_GENL_NAME): control.
 *   2. The character device /dev/bftrace: per-CPU record streams.
 *
 * Everything a tool needs to drive the module or to decode what it records
 * is defined in this file, and nowhere else.
 *
 * ==========================================================================
 * 1. Generic netlink
 * ==========================================================================
 *
 * Family name "bftrace", version BFT_GENL_VERSION.  Resolve the family id and
 * the id of the multicast group BFT_MCGRP_EVENTS through CTRL_CMD_GETFAMILY by
 * name.  The module carries MODULE_ALIAS_GENL_FAMILY("bftrace"), so that
 * lookup also loads it.
 *
 * Permissions (docs/kernel-module.md, "Security model").  Every command but
 * BFT_CMD_GET_CAPS and BFT_CMD_GET_OPT needs CAP_PERFMON or CAP_SYS_ADMIN in
 * the initial user namespace, held both by the process that opened the socket
 * and by the sender (netlink_capable()); else -EPERM.  BFT_CMD_ATTACH also
 * needs ptrace access to the target in attach mode (ptrace policy: Yama,
 * SELinux, AppArmor) and read permission on each file; else -EPERM or
 * -EACCES.  Joining BFT_MCGRP_EVENTS needs CAP_SYS_ADMIN.  Every rejection
 * by the module carries an extack message, and where one attribute is at
 * fault, its offset.  A refused dump (GET_METHODS, GET_EXCEPTIONS) may end
 * in NLMSG_DONE carrying the errno and the text rather than NLMSG_ERROR
 * (on 6.1, whose dump start has no extack).
 *
 * Sessions.  BFT_CMD_START makes the sending socket the session's owner:
 * when that socket is released (closed, or its process exits or is killed),
 * the session stops as BFT_CMD_STOP stops it, before close() returns.  With
 * BFT_A_PERSIST the session has no owner and lasts until BFT_CMD_STOP or
 * rmmod.  Pausing or reading the rings makes no one an owner.
 *
 * Ownership starts at the attach (BFT_FEAT_ATTACH_PERSIST): a target
 * attached while no session is active (INITIALIZING or SHUTTING_DOWN)
 * belongs to the socket that last attached to it, and when that socket is
 * released before a start, the target is detached as BFT_CMD_DETACH
 * detaches it: a controller that dies between attach and start leaves no
 * probe behind.  BFT_A_PERSIST on BFT_CMD_ATTACH makes the target nobody's
 * (a tool that attaches and exits, as 'bfctl attach' does); BFT_CMD_START
 * hands every target to the session (its owner, or none with persist).
 * Targets attached while a session is active are the session's.
 *
 * Commands, their request attributes and their reply attributes:
 *
 * BFT_CMD_GET_CAPS          (any user)
 *     reply: BFT_A_PROTO_VERSION, BFT_A_FEATURES (BFT_FEAT_* bits),
 *            BFT_A_NR_CPUS, BFT_A_LIMITS (nest of BFT_LIM_*).
 *     The seeds/004 handshake: a tool checks the version and the feature
 *     bits before it uses anything else.
 *
 * BFT_CMD_ATTACH            (privileged, and ptrace access to the target)
 *     request: BFT_A_TGID, BFT_A_PROBES (nest of BFT_A_PROBE nests, each
 *              holding BFT_P_PATH, BFT_P_OFFSET, BFT_P_METHOD_ID,
 *              BFT_P_FLAGS, BFT_P_NAME), BFT_A_PERSIST (optional; see
 *              Sessions above).
 *     reply:   BFT_A_TGID, BFT_A_RESULTS (nest of BFT_A_RESULT nests, each
 *              holding BFT_R_INDEX and BFT_R_ERRNO, 0 meaning attached).
 *     The whole batch is checked before anything is registered; a bad probe
 *     rejects the batch, names the probe's index in the extack text, and
 *     attaches nothing:
 *       -ESRCH   the tgid names no live process
 *       -ENOENT  the path does not exist
 *       -EISDIR  the path is a directory
 *       -EINVAL  the path is not a regular file, flags are invalid, the
 *                offset is not aligned to the architecture's breakpoint
 *                size (x86 has none: every offset is aligned there), or
 *                the offset lies in no executable segment of the file
 *       -ENOEXEC the file is not ELF
 *       -ERANGE  the offset lies past the end of the file
 *       -EEXIST  (tgid, file, offset) is attached already, or twice in the
 *                batch, or the method id is in use for another function
 *       -E2BIG   the probes would exceed BFT_OPT_MAX_PROBES
 *       -EPERM   ptrace policy forbids access to the tgid
 *       -EACCES  the caller may not read the file
 *     A known tgid whose process exec'd since it was attached is a new
 *     target: the old one is reaped (BFT_EV_TARGET_EXIT) first.
 *     A probe that passes the checks and that the kernel then refuses to
 *     register gets its errno in its BFT_A_RESULT (-EOPNOTSUPP: uprobes
 *     cannot probe the instruction there); the others stay attached.
 *     Every probe of the request gets exactly one BFT_A_RESULT.  If none
 *     attached, the request fails with the first errno.
 *     A nest's length is 16 bits, so one request holds at most 64 KiB of
 *     probes (about a thousand): a tool splits larger batches, and the
 *     all-or-nothing check holds per request.
 *
 * BFT_CMD_DETACH            (privileged, and ptrace access to the targets)
 *     request: BFT_A_TGID, or none for every target.  -ENOENT: no such target.
 *     With BFT_A_TGID, a BFT_A_PROBES nest of BFT_A_PROBE nests, each
 *     holding only BFT_P_METHOD_ID, detaches just those probes of the
 *     target (BFT_FEAT_DETACH_SOME): what a tool does when the target
 *     unmaps the object they were on (dlclose).  The whole list is checked
 *     first: an id that names no attached probe of the target is -ENOENT,
 *     an id given twice -EINVAL, both with the id in the extack text, and
 *     nothing is detached.  The probes detached stay in GET_METHODS with
 *     BFT_PF_GONE, named as a detach names them; their ids stay the
 *     target's and may be attached again.  The target stays, even with no
 *     probe left.
 *     -EPERM (nothing detached) if the caller may not ptrace a target that
 *     still runs, checked on a live thread of it (its main thread may have
 *     exited), or if no live thread of it can be checked.  BFT_CMD_STOP has
 *     the same rule for every target; the end of a session whose owner's
 *     socket is released has none.
 *
 * BFT_CMD_START, BFT_CMD_STOP, BFT_CMD_PAUSE, BFT_CMD_UNPAUSE,
 * BFT_CMD_SUSPEND, BFT_CMD_UNSUSPEND   (privileged)
 *     no attributes but BFT_A_PERSIST (start only, see Sessions above);
 *     reply BFT_A_MODE, the mode now in force.
 *     The modes are those of the Bytefrog agent (seeds/000):
 *       INITIALIZING --start--> TRACING <--pause/unpause--> PAUSED
 *       TRACING <--suspend/unsuspend--> SUSPENDED
 *       any --stop--> SHUTTING_DOWN --start--> TRACING
 *     - start: recording begins.  Hits before it are ignored, not counted.
 *     - pause: every thread of every target is stopped (SIGSTOP); recording
 *       stays on, so nothing in flight is lost.  unpause sends SIGCONT.
 *       -EPERM, nothing stopped, if a target is PID 1, the caller's own
 *       process, or one the caller may not ptrace (as for DETACH).
 *     - suspend: recording stops; a BFT_ESC_BREAK record goes into every
 *       CPU stream.  Hits while suspended are dropped on purpose: they are
 *       counted in BFT_S_SUSPENDED, not as lost.
 *     - stop: recording ends, a BFT_ESC_BREAK (BFT_BREAK_STOP) record goes
 *       into every CPU stream, every probe is detached, every pending
 *       record is sealed and the readers are woken.  A paused target is
 *       continued.
 *     A transition that makes no sense from the current mode is -EINVAL
 *     (e.g. unpause while tracing), with the current mode in the text.
 *
 * BFT_CMD_GET_STATUS        (privileged)
 *     reply: BFT_A_MODE, BFT_A_NR_PROBES, BFT_A_NR_TARGETS, BFT_A_OWNER,
 *            BFT_A_CPU_STATS (nest of BFT_A_CPU nests holding BFT_S_*).
 *     Before the rings are allocated (see 2.), BFT_S_SIZE is the size
 *     they will have.
 *     For each CPU: produced == written + lost, with pending records (an
 *     unsealed exit run) counted in produced only until sealed.  After
 *     BFT_CMD_STOP nothing is pending.
 *
 * BFT_CMD_GET_OPT           (any user)
 *     request: BFT_A_OPT_ID, or none for every option.
 *     reply:   one BFT_A_OPT nest per option: BFT_O_ID, BFT_O_VALUE,
 *              BFT_O_MIN, BFT_O_MAX, BFT_O_FLAGS (BFT_OPTF_*).
 * BFT_CMD_SET_OPT           (privileged)
 *     request: BFT_A_OPT_ID, BFT_A_OPT_VALUE.  reply: as GET_OPT, one nest.
 *     Status codes, distinct as seeds/004 asks:
 *       -ENOENT      unknown option id
 *       -EOPNOTSUPP  an option this protocol defines but this build does
 *                    not support
 *       -ERANGE      value out of [min, max] or not a power of two where
 *                    one is needed, or rings over BFT_OPT_MAX_RING_MEM
 *       -EBUSY       the option cannot change while probes are attached
 *                    or the mode is TRACING, PAUSED or SUSPENDED
 *
 * BFT_CMD_GET_METHODS       (privileged; a dump)
 *     one message per probe: BFT_A_TGID and a BFT_A_PROBE nest holding
 *     BFT_P_METHOD_ID, BFT_P_PATH, BFT_P_OFFSET, BFT_P_FLAGS, BFT_P_NAME,
 *     BFT_P_HITS.  (BFT_P_* and BFT_A_* numbers overlap: BFT_P_* never
 *     appear outside a BFT_A_PROBE nest.)  A collector names methods while
 *     it drains, often after the target exited or tracing stopped, so a
 *     detached probe's entry stays in the dump, with BFT_PF_GONE in its
 *     flags, until the next BFT_CMD_START (at most 65536 such entries,
 *     the oldest dropped first).  BFT_P_PATH of a live entry is resolved
 *     against the reader's root; a detached entry keeps the name its file
 *     had when a controller detached or stopped (so it pins no file
 *     system), resolved against that controller's root.  An entry of a
 *     target the module reaped is resolved against the reader's root until
 *     the next detach or stop names it.
 *
 * BFT_CMD_GET_EXCEPTIONS    (privileged; a dump)
 *     one message per exception type seen by a BFT_PF_HOOK_THROW probe:
 *     BFT_A_TGID and a BFT_A_EXC nest holding BFT_X_ID (the id that
 *     BFT_ESC_THROW records carry) and BFT_X_NAME (the type's name as
 *     std::type_info::name() gives it, i.e. mangled without the "_Z":
 *     "St13runtime_error").  Ids are numbered from 1 in the order types
 *     are first thrown, per module, not per target.  Entries stay until
 *     the next BFT_CMD_START.  Past BFT_MAX_EXC_TYPES types, or when the
 *     name cannot be read from the target, a THROW carries type 0
 *     (unknown).
 *
 * BFT_CMD_EVENT             (multicast on BFT_MCGRP_EVENTS, never a request;
 *                            joining the group needs CAP_SYS_ADMIN)
 *     BFT_A_EVENT (BFT_EV_*), then:
 *       BFT_EV_HEARTBEAT     BFT_A_MODE, BFT_A_FILL_PERMILLE (fullest
 *                            ring), BFT_A_CPU_STATS; every heartbeat
 *                            interval.
 *       BFT_EV_MODE          BFT_A_MODE, on every mode change.
 *       BFT_EV_TARGET_EXIT   BFT_A_TGID, BFT_A_NR_PROBES (detached); the
 *                            target exited or exec'd while attached, and
 *                            is cleaned up.  A target detached first (by
 *                            detach or stop) is not announced.
 *       BFT_EV_PROBE_FAILED  BFT_A_TGID, BFT_A_ERRNO, and a BFT_A_PROBE
 *                            nest holding BFT_P_METHOD_ID.
 *
 * ==========================================================================
 * 2. The record streams (/dev/bftrace)
 * ==========================================================================
 *
 * One ring per possible CPU, BFT_OPT_BUF_SIZE bytes each, all of them
 * together at most BFT_OPT_MAX_RING_MEM MiB, charged to the memory cgroup of
 * the process that made the module allocate them: the first attach, start or
 * bind (loading the module allocates nothing).  A reader opens
 * /dev/bftrace, binds the file to one CPU with BFT_IOC_BIND_CPU, and read()s.
 * read() returns whole records only: a record is never split between two
 * reads, so a decoder may treat every read as a continuation of the same
 * stream and never sees a torn record.  read() blocks until data is
 * available unless O_NONBLOCK (then -EAGAIN); it never returns 0, not even
 * after stop: a stream has no end while the module is loaded.  A read
 * buffer smaller than BFT_RECORD_MAX is -EINVAL.  poll() reports POLLIN when
 * the ring holds at least BFT_OPT_WATERMARK bytes, or when the flush timer
 * (BFT_OPT_FLUSH_MS) has sealed data that no read has taken yet; so an idle
 * CPU's last records reach the reader within one flush interval.
 * A ring has one reader at a time: a second bind to the same CPU is -EBUSY.
 *
 * 2.1 Events: the seeds/001 packed-varint encoding, with time inside.
 *
 *   first byte: bit 7 flag (1 = ENTER, 0 = EXIT), bit 6 continuation,
 *               bits 5..0 the low 6 bits of the value.
 *   more bytes (iff bit 6): unsigned LEB128 of (value >> 6).
 *   ENTER: value = (method id << tbits) | units.
 *   EXIT:  value = ((number of consecutive exits - 1) << tbits) | units.
 *
 *   tbits is the last field of the SYNC before the record (2.2).  Both
 *   writers start a session at BFT_TIME_BITS and choose tbits again at
 *   every SYNC: the value from 0 to BFT_TIME_BITS_MAX in which, by
 *   their estimate from the ids' and the gaps' bit lengths, the ENTER and
 *   EXIT records since the SYNC before would have taken the fewest bytes
 *   (the one they had on a tie, else the smallest), so events that come
 *   several units apart (a trap that costs microseconds) still take a
 *   byte each.  A reader takes tbits from each SYNC and assumes nothing
 *   else about it.  units, the low tbits bits, is a TIME delta
 *   applied before the event: stream time += units * res_ns, exactly as a
 *   TIME_SHORT record in front of it would.  A delta that does not fit
 *   goes into a TIME or TIME_SHORT record before the event, which then
 *   carries 0.  With tbits 0 the value is exactly seeds/001's, so every
 *   ENTER and EXIT record keeps seeds/001's layout whatever tbits is: a
 *   seeds/001 reader finds the same record boundaries and the same kind,
 *   and only has to shift the value.  Why: at the default 1 us unit, a
 *   call takes a few units, and a separate 2-byte TIME_SHORT before every
 *   event tripled the bytes of a call.
 *
 *   tbits 2:
 *   ENTER 1, same unit                84
 *   ENTER 1, 3 units later            87
 *   ENTER 16, same unit               c0 01
 *   ENTER 8192, same unit             c0 80 04
 *   1 exit, 2 units later             02
 *   3 exits, same unit                08
 *   65 exits, 1 unit later            41 04
 *   tbits 4:
 *   ENTER 1, 7 units later            97
 *   ENTER 3, 15 units later           bf
 *   ENTER 4, same unit                c0 01
 *   1 exit, 9 units later             09
 *   2 exits, same unit                10
 *   tbits 0 (seeds/001):
 *   ENTER 1        81
 *   ENTER 64       c0 01
 *   ENTER 8192     c0 80 01        (seeds/001's own example is wrong)
 *   1 exit         00
 *   3 exits        02
 *   65 exits       40 01
 *
 *   Consecutive exits of one thread on one CPU, within one time unit, are
 *   one EXIT record, which carries the units of its first exit.  The
 *   writer keeps the open run unpublished until another record follows or
 *   the flush timer seals it.
 *
 * 2.2 Escape records.
 *
 *   A canonical seeds/001 writer never emits a multi-byte value whose last
 *   byte is 0x00.  bftrace uses that overlong form as its escape:
 *
 *       0x40 | kind, 0x00, payload...
 *
 *   kind is 6 bits; the payload is a kind-specific list of unsigned LEB128
 *   varints (plain LEB128, no flag bit), and for NAME the bytes its count
 *   gives.  kind 0 is invalid.
 *
 *   BFT_ESC_SYNC (1): seq, time_ns, res_ns, tbits
 *       seq: how many events (ENTER, ENTER_NORET and each exit of an EXIT
 *       run) this CPU produced before this point, lost ones included.  A
 *       reader counts events and LOST counts from one SYNC to the next; any
 *       mismatch proves a gap.  time_ns: CLOCK_MONOTONIC, absolute.
 *       res_ns: the unit of TIME deltas from here on.  tbits: the time
 *       bits of ENTER and EXIT values from here on (2.1), at most
 *       BFT_TIME_BITS_MAX.  Written first in
 *       every ring, and by the flush timer into every ring of a tracing
 *       session once per flush interval, even an idle one: that is the
 *       heartbeat of seeds/002, telling a merger that this CPU holds
 *       nothing older.
 *       example: seq 0, time 1000000 ns, res 1000 ns, tbits 2:
 *         41 00  00  c0 84 3d  e8 07  02
 *   BFT_ESC_THREAD (2): tgid, tid, delta_ns
 *       The events that follow belong to this thread.  The stream time
 *       becomes its current value + delta_ns, exactly, and later TIME
 *       units count from there.  Written whenever the thread writing to
 *       this CPU changes, or has been scheduled out since its last record
 *       here, and before the first event after every SYNC (so a decoder
 *       that resynchronises at a SYNC never needs older context).  A
 *       migration takes a context switch, so the THREAD time on the new
 *       CPU is strictly later than the thread's last record on the old
 *       one: a thread's events, merged across CPUs by stream time, are
 *       always in the order it made them.  An event before any THREAD
 *       is malformed.
 *       example: tgid 1234, tid 1235, 500 ns:  42 00  d2 09  d3 09  f4 03
 *   BFT_ESC_TIME (3): delta
 *       Stream time += delta * res_ns.  Stream time is the true time
 *       rounded down to the unit, never later than it.
 *       example: 200 units:  43 00  c8 01
 *   BFT_ESC_LOST (4): n
 *       n events were dropped here because the ring was full; it is
 *       written at the stream time of the record before it, just ahead of
 *       the next record that fits (or, for what a stopped session of a
 *       ring that outlives it still owed, right after the next session's
 *       SYNC and BREAK, whose seq leaves those events out).  The
 *       per-thread structure across a loss is unknown: treat it as a data
 *       break for every thread.    example: 7 lost:  44 00  07
 *   BFT_ESC_BREAK (5): reason (BFT_BREAK_*)
 *       Recording stopped here and resumed after; call stacks inferred
 *       before it are void.  Always right after a SYNC, so it sits at an
 *       exact time.  A call entered while suspended may still have its
 *       exit recorded after the break: it is an orphan exit, to be
 *       counted and dropped.       example: suspend:  45 00  01
 *   BFT_ESC_ENTER_NORET (6): method id
 *       An entry whose exit will not be recorded: the thread had
 *       BFT_URETPROBE_DEPTH return probes pending, or the probe has no
 *       BFT_PF_RETURN.  Such a frame ends when the next EXIT of its thread
 *       arrives: that EXIT first closes every NORET frame on top of the
 *       stack, then one ordinary frame.  So no exit is ever attributed to
 *       the wrong frame.          example: method 5:  46 00  05
 *   BFT_ESC_THROW (7): type, how
 *       The thread throws: written when a BFT_PF_HOOK_THROW, _RETHROW or
 *       _FORCED probe hits, so the thread's innermost open frame is the
 *       one that throws.  type: a BFT_CMD_GET_EXCEPTIONS id, or 0 when
 *       unknown (always 0 for a rethrow, which throws the exception the
 *       thread caught last, and for a forced unwind).  how: BFT_THROW_*.
 *       It closes no frame.  Counts as one event in seq.
 *       example: type 2 thrown:  47 00  02 01
 *   BFT_ESC_UNWIND (8): n, reason
 *       n frames of this thread were left without returning: each of the
 *       n times, every ENTER_NORET frame on top of the thread's stack is
 *       closed, then one ENTER frame, exactly as an EXIT run of n would
 *       close them, but the frames did not return.  reason: BFT_UNWIND_*.
 *       CATCH is written at the start of the catch block (so the
 *       frames are closed at the time of the catch), LONGJMP at the
 *       longjmp, EXIT when the thread's start routine is over (after
 *       pthread_exit or pthread_cancel, whose last jump, inside the C
 *       library, no hook sees), FOUND just before the ENTER of a later
 *       probe hit that
 *       found the frames gone: frames a C++ exception unwound before a
 *       traced destructor or cleanup ran, or frames left by a jump that
 *       no hook saw.  Counts as one event in seq.  Closing more frames
 *       than the thread has open (frames entered before a SYNC the
 *       reader started at, or before a BREAK) is like an orphan exit:
 *       counted and dropped.
 *       example: 2 frames left by a caught exception:  48 00  02 01
 *   BFT_ESC_NAME (9): n, then n bytes
 *       The name of the thread of the last THREAD record, taken by the
 *       writer while the thread runs (its comm: what prctl(PR_SET_NAME)
 *       and pthread_setname_np set): n, a varint of 0 to BFT_THREAD_NAME_MAX,
 *       then the n bytes of the name, none of them 0, with no terminator.
 *       It is the one escape whose payload holds bytes that are not
 *       varints.  Written right after a THREAD record, when this ring has
 *       not named that thread since its last SYNC or the thread's name
 *       changed since; a writer may repeat it.  So a reader that starts at
 *       any SYNC learns every thread's name before its first event there,
 *       and a thread that names itself, calls and exits at once keeps its
 *       name.  A rename shows at the thread's next THREAD record (after a
 *       context switch, or a SYNC).  Not an event: seq does not count it.
 *       example: "worker-1":  49 00  08  77 6f 72 6b 65 72 2d 31
 *   BFT_ESC_MARK (10): id, n, signed, unread
 *       A USDT probe (BFT_PF_USDT) was hit by the thread of the last
 *       THREAD record: id is the probe's BFT_P_METHOD_ID, n (0 to
 *       BFT_USDT_MAX_ARGS) its number of arguments.  Bit i of signed:
 *       argument i is signed.  Bit i of unread: argument i could not be
 *       read (its memory faulted or is not mapped) and its ARG carries 0.
 *       The n BFT_ESC_ARG records of the arguments, in order, follow at
 *       once in the same ring, with nothing between: a writer that cannot
 *       fit all of them writes none, and counts one lost event.  Counts
 *       as one event in seq; the ARGs do not.
 *       example: probe 7 with 3 arguments, the first signed:
 *         4a 00  07 03 01 00
 *   BFT_ESC_ARG (11): value
 *       One argument of the MARK before it, read with the size and sign
 *       its BFT_P_ARGS entry gives: an unsigned argument is its value
 *       zero-extended to 64 bits; a signed one is sign-extended to 64
 *       bits and zigzag-encoded, (v << 1) ^ (v >> 63), so -1 is 1 and 1
 *       is 2.  Not an event.
 *       examples: signed -3:  4b 00  05
 *                 unsigned 5000000000:  4b 00  80 e4 97 d0 12
 *                 unsigned 2^64 - 1:  4b 00  ff ff ff ff ff ff ff ff ff 01
 *   BFT_ESC_TIME_SHORT (0x20..0x3f): no payload
 *       Stream time += (kind - 0x1f) * res_ns, i.e. 1 to 32 units.
 *       example: 3 units:  62 00
 *
 * 2.3 Exceptions and non-local exits.
 *
 *   A return probe replaces the return address in the probed frame's
 *   stack slot with the address of the kernel's return trampoline.  An
 *   unwinder that walks the stack (C++ exceptions, pthread_cancel) finds
 *   no unwind information for the trampoline and gives up: the program
 *   calls std::terminate.  The hooks prevent that:
 *   - BFT_PF_HOOK_UNWIND, _FORCED (the unwinder's entry points): the real
 *     return address of every pending return probe of the thread is
 *     written back into its slot, where the slot still holds the
 *     trampoline, so the unwinder sees the real callers.
 *   - BFT_PF_HOOK_CATCH (__cxa_begin_catch): the frames the exception
 *     left are closed with one BFT_ESC_UNWIND (CATCH); the frames still
 *     on the stack get the trampoline back, so their exits are recorded.
 *     The probe also carries a return probe of its own, so that the
 *     kernel drops the left frames' return instances at this very point.
 *   - BFT_PF_HOOK_LONGJMP: the jump's target stack pointer is read from
 *     the jmp_buf (glibc's pointer mangling undone); the frames below it
 *     are closed with one BFT_ESC_UNWIND (LONGJMP).
 *   - BFT_PF_HOOK_EXIT (glibc's __call_tls_dtors, which a thread calls
 *     when its start routine is over, returned or unwound by
 *     pthread_exit/pthread_cancel, and exit() calls): the frames gone at
 *     this stack pointer are closed with one BFT_ESC_UNWIND (EXIT).  Like
 *     the catch hook, it carries a return probe of its own, so the kernel
 *     drops their return instances at this very point.
 *   - Any probe with a return probe: frames whose return instance the
 *     kernel is about to drop because they are gone are closed first with
 *     one BFT_ESC_UNWIND (FOUND), unless a hook closed them already.
 *   So every frame that was entered with ENTER is closed exactly once:
 *   by an EXIT, or by an UNWIND.  A frame left by a jump that no hook saw
 *   (swapcontext, a custom unwinder) and then passed by a returning
 *   outer frame is still misattributed: the kernel drops its return
 *   instance without telling any handler.
 *
 * 2.4 USDT probes.  A probe with BFT_PF_USDT sits on a <sys/sdt.h> site
 * (a nop the ELF note .note.stapsdt describes).  Its handler records one
 * BFT_ESC_MARK and its BFT_ESC_ARGs and nothing else: no ENTER, no return
 * probe.  BFT_PF_USDT takes no other BFT_PF_* bit.  Its BFT_P_NAME is
 * "provider:name" by convention, and its method id shares the id space of
 * the functions'.  BFT_P_REF_CTR_OFFSET, when not 0, is the file offset of
 * the probe's semaphore: the kernel adds one to that 2-byte counter in
 * the target while the probe is registered (the uprobe ref_ctr_offset),
 * and takes it back at detach.  BFT_P_ARGS holds
 * the arguments: an array of struct bft_usdt_arg, at most
 * BFT_USDT_MAX_ARGS, each evaluated at the hit as
 *     BFT_USDT_CONST  value
 *     BFT_USDT_REG    register base, shifted right by shift (8 for %ah)
 *     BFT_USDT_MEM    the size bytes of the process at
 *                     value + base + index * scale
 * then cut to size bytes (1, 2, 4 or 8) and sign- or zero-extended.  A
 * register is an 8-byte slot of x86-64's struct pt_regs (r15 0, r14 1,
 * r13 2, r12 3, rbp 4, rbx 5, r11 6, r10 7, r9 8, r8 9, rax 10, rcx 11,
 * rdx 12, rsi 13, rdi 14, rip 16, rsp 19), BFT_USDT_NOREG for none, or
 * BFT_USDT_SITE, the address the probe site has in the process: a tool
 * turns an operand naming a symbol into BFT_USDT_SITE plus the symbol's
 * distance from the site, so no load address needs to be known.  The
 * attach rejects, with -EINVAL: BFT_P_ARGS or BFT_P_REF_CTR_OFFSET
 * without BFT_PF_USDT, a size that is not a whole number of entries, too
 * many entries, a bad loc, size, scale, shift or register, nonzero pad,
 * and a semaphore offset past the end of the file (-ERANGE).
 *   example, "-4@-8(%rbp)": loc 2, size 4, signed 1, base 4, index 0xff,
 *   scale 1, shift 0, pad 0, value -8:
 *     02 04 01 04 ff 01 00 00  f8 ff ff ff ff ff ff ff
 *
 * 2.5 Memory ordering (kmod/bft_ring.c).  Ring n is written only on CPU n,
 * with preemption off: by the handlers there, and by the flush work and
 * the control path through a work item bound to CPU n; no lock.  Bytes in
 * [tail, head) are never written; the writer's smp_store_release(head)
 * after its bytes pairs with the reader's smp_load_acquire(head) before
 * its copy, and the writer's smp_load_acquire(tail) with the reader's
 * smp_store_release(tail) after its copy, so a slot is reused only after
 * it has been read.
 *
 * 2.6 The status without netlink: BFT_IOC_STATUS on any /dev/bftrace file,
 * bound or not (ioctl number 0xc020bf02 on x86-64), answers what
 * BFT_CMD_GET_STATUS answers, in one system call with no message to build
 * or parse: a sampler asking ten times a second pays a few microseconds.
 * The same permission holds: CAP_PERFMON or CAP_SYS_ADMIN in the initial
 * user namespace, held both by the process that opened the file and by
 * the caller; else -EPERM.  The caller sets nr_cpus to the number of
 * struct bft_ioc_cpu_stats at cpus (0: none wanted) and pad to 0 (else
 * -EINVAL); the module fills mode, nr_probes, nr_targets and owner, one
 * entry per possible CPU in CPU order up to nr_cpus of them (pad 0), and
 * sets nr_cpus to the number of possible CPUs, so a short array can be
 * grown and the call repeated.  An unwritable array is -EFAULT.  Sizes:
 * struct bft_ioc_status is 32 bytes, struct bft_ioc_cpu_stats 64.  E.g.
 * a tracing session (mode 1) with 3 probes on 1 target, owner port 4242,
 * on a 2-CPU machine, little-endian, asked with nr_cpus 2:
 *   01 00 00 00  03 00 00 00  01 00 00 00  92 10 00 00
 *   02 00 00 00  00 00 00 00  <the array's address, unchanged>
 * and cpus[0], CPU 0 with 24 bytes used of 64 KiB, 10 records produced
 * and written, 30 bytes written, 6 read:
 *   00 00 00 00  18 00 00 00  00 00 01 00  00 00 00 00
 *   0a 00.. (8)  0a 00.. (8)  00.. (8 lost)  00.. (8 suspended)
 *   1e 00.. (8)  06 00.. (8)
 */
#ifndef _UAPI_LINUX_BFTRACE_H
#define _UAPI_LINUX_BFTRACE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define BFT_GENL_NAME		"bftrace"
#define BFT_GENL_VERSION	1
#define BFT_MCGRP_EVENTS	"events"
#define BFT_DEV_NAME		"bftrace"	/* /dev/bftrace */
/*
 * 2: time inside ENTER and EXIT, SYNC's tbits (section 2.1)
 * 3: NAME records (section 2.2), which a reader of 2 cannot skip
 * 4: USDT probes, MARK and ARG records (sections 2.2, 2.4)
 */
#define BFT_PROTO_VERSION	4

/* The kernel's nesting limit for pending return probes, per thread. */
#define BFT_URETPROBE_DEPTH	64
#define BFT_NAME_MAX		512	/* BFT_P_NAME, with its NUL */
#define BFT_PATH_MAX		4096	/* BFT_P_PATH, with its NUL */
#define BFT_MAX_TARGETS		64
#define BFT_EXC_NAME_MAX	256	/* BFT_X_NAME, with its NUL */
#define BFT_MAX_EXC_TYPES	1024

enum bft_cmd {
	BFT_CMD_UNSPEC,
	BFT_CMD_GET_CAPS,
	BFT_CMD_ATTACH,
	BFT_CMD_DETACH,
	BFT_CMD_START,
	BFT_CMD_STOP,
	BFT_CMD_PAUSE,
	BFT_CMD_UNPAUSE,
	BFT_CMD_SUSPEND,
	BFT_CMD_UNSUSPEND,
	BFT_CMD_GET_STATUS,
	BFT_CMD_GET_OPT,
	BFT_CMD_SET_OPT,
	BFT_CMD_GET_METHODS,
	BFT_CMD_EVENT,
	BFT_CMD_GET_EXCEPTIONS,
	__BFT_CMD_MAX,
};

#define BFT_CMD_MAX (__BFT_CMD_MAX - 1)

/* Top-level attributes. */
enum bft_attr {
	BFT_A_UNSPEC,
	BFT_A_PROTO_VERSION,	/* u32 */
	BFT_A_FEATURES,		/* u64, BFT_FEAT_* */
	BFT_A_NR_CPUS,		/* u32: possible CPUs = number of rings */
	BFT_A_LIMITS,		/* nest: BFT_LIM_* */
	BFT_A_TGID,		/* u32 */
	BFT_A_PROBES,		/* nest of BFT_A_PROBE */
	BFT_A_PROBE,		/* nest: BFT_P_* */
	BFT_A_RESULTS,		/* nest of BFT_A_RESULT */
	BFT_A_RESULT,		/* nest: BFT_R_* */
	BFT_A_MODE,		/* u8, enum bft_mode */
	BFT_A_NR_PROBES,	/* u32 */
	BFT_A_NR_TARGETS,	/* u32 */
	BFT_A_CPU_STATS,	/* nest of BFT_A_CPU */
	BFT_A_CPU,		/* nest: BFT_S_* */
	BFT_A_OPT_ID,		/* u32, enum bft_opt */
	BFT_A_OPT_VALUE,	/* u64 */
	BFT_A_OPT,		/* nest: BFT_O_* */
	BFT_A_EVENT,		/* u8, enum bft_event */
	BFT_A_FILL_PERMILLE,	/* u32 */
	BFT_A_ERRNO,		/* s32, a positive errno */
	BFT_A_PAD,
	BFT_A_EXC,		/* nest: BFT_X_* */
	BFT_A_PERSIST,		/* flag: BFT_CMD_START or _ATTACH without an owner */
	BFT_A_OWNER,		/* u32: the session owner's port id, 0 none */
	__BFT_A_MAX,
};

#define BFT_A_MAX (__BFT_A_MAX - 1)

/* Inside BFT_A_PROBE, and in BFT_CMD_GET_METHODS messages. */
enum bft_probe_attr {
	BFT_P_UNSPEC,
	BFT_P_PATH,		/* NUL-terminated string, < BFT_PATH_MAX */
	BFT_P_OFFSET,		/* u64: file offset of the probed instruction */
	BFT_P_METHOD_ID,	/* u32: the id ENTER records carry */
	BFT_P_FLAGS,		/* u32, BFT_PF_* */
	BFT_P_NAME,		/* NUL-terminated string: display signature */
	BFT_P_HITS,		/* u64: entry hits recorded (dump only) */
	BFT_P_PAD,
	BFT_P_REF_CTR_OFFSET,	/* u64: BFT_PF_USDT's semaphore (2.4), 0 none */
	BFT_P_ARGS,		/* binary: struct bft_usdt_arg[] (2.4) */
	__BFT_P_MAX,
};

#define BFT_P_MAX (__BFT_P_MAX - 1)

#define BFT_PF_ENTRY	(1U << 0)	/* record ENTER */
#define BFT_PF_RETURN	(1U << 1)	/* record EXIT; needs BFT_PF_ENTRY */
#define BFT_PF_ALL	(BFT_PF_ENTRY | BFT_PF_RETURN)
/*
 * Hooks (section 2.3): a probe on a function of the target's C++ runtime,
 * C library or unwinder, whose handler keeps the return probes of the
 * thread consistent with its stack.  At most one hook bit per probe; a
 * hook may be combined with BFT_PF_ENTRY/BFT_PF_RETURN when the function
 * is also traced (the hook acts first).  A hook alone records no ENTER.
 */
#define BFT_PF_HOOK_UNWIND	(1U << 2)	/* _Unwind_RaiseException & co. */
#define BFT_PF_HOOK_CATCH	(1U << 3)	/* __cxa_begin_catch */
#define BFT_PF_HOOK_THROW	(1U << 4)	/* __cxa_throw */
#define BFT_PF_HOOK_RETHROW	(1U << 5)	/* __cxa_rethrow */
#define BFT_PF_HOOK_FORCED	(1U << 6)	/* _Unwind_ForcedUnwind */
#define BFT_PF_HOOK_LONGJMP	(1U << 7)	/* longjmp, siglongjmp, ... */
#define BFT_PF_HOOK_EXIT	(1U << 8)	/* __call_tls_dtors */
#define BFT_PF_HOOKS	(BFT_PF_HOOK_UNWIND | BFT_PF_HOOK_CATCH |	\
			 BFT_PF_HOOK_THROW | BFT_PF_HOOK_RETHROW |	\
			 BFT_PF_HOOK_FORCED | BFT_PF_HOOK_LONGJMP |	\
			 BFT_PF_HOOK_EXIT)
/* A USDT site: records BFT_ESC_MARK (section 2.4); no other bit with it. */
#define BFT_PF_USDT		(1U << 9)
/* In BFT_CMD_GET_METHODS only: the probe is detached (see there). */
#define BFT_PF_GONE	(1U << 31)

/* Inside BFT_A_EXC (BFT_CMD_GET_EXCEPTIONS). */
enum bft_exc_attr {
	BFT_X_UNSPEC,
	BFT_X_ID,		/* u32: the type id of BFT_ESC_THROW */
	BFT_X_NAME,		/* NUL-terminated string, < BFT_EXC_NAME_MAX */
	__BFT_X_MAX,
};

#define BFT_X_MAX (__BFT_X_MAX - 1)

enum bft_result_attr {
	BFT_R_UNSPEC,
	BFT_R_INDEX,		/* u32: position of the probe in the request */
	BFT_R_ERRNO,		/* s32: 0 attached, else a positive errno */
	__BFT_R_MAX,
};

#define BFT_R_MAX (__BFT_R_MAX - 1)

enum bft_limit_attr {
	BFT_LIM_UNSPEC,
	BFT_LIM_MAX_TARGETS,	/* u32 */
	BFT_LIM_MAX_PROBES,	/* u32: the ceiling of BFT_OPT_MAX_PROBES */
	BFT_LIM_NAME_MAX,	/* u32 */
	BFT_LIM_PATH_MAX,	/* u32 */
	BFT_LIM_URETPROBE_DEPTH,/* u32 */
	__BFT_LIM_MAX,
};

#define BFT_LIM_MAX (__BFT_LIM_MAX - 1)

/*
 * Per-CPU statistics, inside BFT_A_CPU.  The BPF backend (docs/bpf-backend.md)
 * counts an event as written when it enters its CPU's batch, which reaches
 * the ring by the next flush; a batch the full ring refuses then moves from
 * WRITTEN to LOST.  After a flush the two backends' counts mean the same.
 */
enum bft_stat_attr {
	BFT_S_UNSPEC,
	BFT_S_CPU,		/* u32 */
	BFT_S_PRODUCED,		/* u64: events the handlers tried to record */
	BFT_S_WRITTEN,		/* u64: events that reached the ring */
	BFT_S_LOST,		/* u64: events dropped, ring full */
	BFT_S_SUSPENDED,	/* u64: hits ignored while suspended */
	BFT_S_BYTES_WRITTEN,	/* u64 */
	BFT_S_BYTES_READ,	/* u64 */
	BFT_S_USED,		/* u32: bytes in the ring now */
	BFT_S_SIZE,		/* u32: ring size */
	BFT_S_PAD,
	BFT_S_READER,		/* u8: 1 while a reader holds this ring, else 0;
				 * a recording session with none fills its
				 * rings and then loses events (newer modules;
				 * netlink only: BFT_IOC_STATUS has no room)
				 */
	__BFT_S_MAX,
};

#define BFT_S_MAX (__BFT_S_MAX - 1)

/* Inside BFT_A_OPT. */
enum bft_opt_attr {
	BFT_O_UNSPEC,
	BFT_O_ID,		/* u32 */
	BFT_O_VALUE,		/* u64 */
	BFT_O_MIN,		/* u64 */
	BFT_O_MAX,		/* u64 */
	BFT_O_FLAGS,		/* u32, BFT_OPTF_* */
	BFT_O_PAD,
	__BFT_O_MAX,
};

#define BFT_O_MAX_ATTR (__BFT_O_MAX - 1)

#define BFT_OPTF_POW2		(1U << 0)	/* value must be a power of 2 */
#define BFT_OPTF_IDLE_ONLY	(1U << 1)	/* -EBUSY while tracing */

enum bft_opt {
	BFT_OPT_UNSPEC,
	BFT_OPT_BUF_SIZE,	/* bytes per CPU ring */
	BFT_OPT_FLUSH_MS,	/* flush timer period */
	BFT_OPT_HEARTBEAT_MS,	/* BFT_EV_HEARTBEAT period */
	BFT_OPT_MAX_DEPTH,	/* deeper frames are not recorded at all */
	BFT_OPT_TIME_RES_NS,	/* unit of TIME deltas */
	BFT_OPT_WATERMARK,	/* poll() threshold, bytes */
	BFT_OPT_MAX_PROBES,	/* probes over all targets */
	BFT_OPT_OVERWRITE,	/* flight-recorder mode: defined, unsupported */
	BFT_OPT_MAX_RING_MEM,	/* MiB of all rings together */
	__BFT_OPT_MAX,
};

#define BFT_OPT_MAX (__BFT_OPT_MAX - 1)

enum bft_mode {
	BFT_MODE_INITIALIZING,
	BFT_MODE_TRACING,
	BFT_MODE_PAUSED,
	BFT_MODE_SUSPENDED,
	BFT_MODE_SHUTTING_DOWN,
};

enum bft_event {
	BFT_EV_UNSPEC,
	BFT_EV_HEARTBEAT,
	BFT_EV_MODE,
	BFT_EV_TARGET_EXIT,
	BFT_EV_PROBE_FAILED,
};

/* BFT_A_FEATURES */
#define BFT_FEAT_ENTRY		(1ULL << 0)	/* entry probes */
#define BFT_FEAT_RETURN		(1ULL << 1)	/* return probes */
#define BFT_FEAT_NORET		(1ULL << 2)	/* BFT_ESC_ENTER_NORET */
#define BFT_FEAT_PAUSE		(1ULL << 3)
#define BFT_FEAT_SUSPEND	(1ULL << 4)
#define BFT_FEAT_EVENTS		(1ULL << 5)	/* multicast group */
#define BFT_FEAT_READ		(1ULL << 6)	/* read() on /dev/bftrace */
/*
 * The BFT_PF_HOOK_* flags, BFT_ESC_THROW/UNWIND and BFT_CMD_GET_EXCEPTIONS:
 * this kernel's return instances can be read and repaired (section 2.3).
 * Without it, a tool must not put return probes on code that C++
 * exceptions unwind through.
 */
#define BFT_FEAT_UNWIND		(1ULL << 7)
#define BFT_FEAT_OWNER		(1ULL << 8)	/* sessions have owners */
/* attaches outside a session have owners; BFT_A_PERSIST on BFT_CMD_ATTACH */
#define BFT_FEAT_ATTACH_PERSIST	(1ULL << 9)
#define BFT_FEAT_USDT		(1ULL << 10)	/* BFT_PF_USDT, MARK, ARG */
#define BFT_FEAT_DETACH_SOME	(1ULL << 11)	/* DETACH of chosen probes */

/* 2.2: escape records */
#define BFT_ESC_LEAD		0x40	/* | kind; then 0x00 */
#define BFT_ESC_KIND_MASK	0x3f
#define BFT_ESC_SYNC		1
#define BFT_ESC_THREAD		2
#define BFT_ESC_TIME		3
#define BFT_ESC_LOST		4
#define BFT_ESC_BREAK		5
#define BFT_ESC_ENTER_NORET	6
#define BFT_ESC_THROW		7
#define BFT_ESC_UNWIND		8
#define BFT_ESC_NAME		9
#define BFT_ESC_MARK		10
#define BFT_ESC_ARG		11
#define BFT_ESC_TIME_SHORT	0x20	/* 0x20..0x3f: 1..32 units */
#define BFT_TIME_SHORT_MAX	32
/* 2.1: time bits of ENTER and EXIT values at a session's start */
#define BFT_TIME_BITS		2
#define BFT_TIME_BITS_MAX	5

#define BFT_BREAK_SUSPEND	1
#define BFT_BREAK_STOP		2

/* BFT_ESC_THROW: how */
#define BFT_THROW_THROW		1	/* __cxa_throw */
#define BFT_THROW_RETHROW	2	/* __cxa_rethrow: the caught one again */
/* _Unwind_ForcedUnwind: pthread_exit, pthread_cancel */
#define BFT_THROW_FORCED	3

/* BFT_ESC_UNWIND: reason */
#define BFT_UNWIND_CATCH	1	/* a catch block was entered */
#define BFT_UNWIND_LONGJMP	2	/* a longjmp left the frames */
#define BFT_UNWIND_FOUND	3	/* found left at a later probe hit */
#define BFT_UNWIND_EXIT		4	/* the thread's start routine is over */

/* BFT_ESC_NAME: the longest name (a comm without its terminator) */
#define BFT_THREAD_NAME_MAX	15

/* BFT_P_ARGS (section 2.4) */
#define BFT_USDT_MAX_ARGS	12	/* as many as <sys/sdt.h> takes */
#define BFT_USDT_CONST		0
#define BFT_USDT_REG		1
#define BFT_USDT_MEM		2
#define BFT_USDT_NREGS		21	/* pt_regs slots r15 .. ss */
#define BFT_USDT_SITE		0xfe	/* pseudo register: the site's address */
#define BFT_USDT_NOREG		0xff

struct bft_usdt_arg {
	__u8 loc;		/* BFT_USDT_CONST, _REG or _MEM */
	__u8 size;		/* 1, 2, 4 or 8 */
	__u8 is_signed;		/* 0 or 1 */
	__u8 base;		/* REG: the register; MEM: base, or NOREG/SITE */
	__u8 index;		/* MEM: index register, or NOREG; else NOREG */
	__u8 scale;		/* MEM: 1, 2, 4 or 8; else 1 */
	__u8 shift;		/* REG: 0, or 8 for %ah..%dh; else 0 */
	__u8 pad;		/* 0 */
	__s64 value;		/* CONST: the value; MEM: displacement; REG: 0 */
};

/* A record is at most this long: a ring never holds a longer one. */
#define BFT_RECORD_MAX		32

/* ioctls on /dev/bftrace (section 2.6) */
#define BFT_IOC_MAGIC		0xBF
#define BFT_IOC_BIND_CPU	_IOW(BFT_IOC_MAGIC, 1, __u32)

/* BFT_IOC_STATUS: one CPU's ring, as the BFT_S_* of BFT_CMD_GET_STATUS */
struct bft_ioc_cpu_stats {
	__u32 cpu;
	__u32 used;
	__u32 size;
	__u32 pad;
	__u64 produced;
	__u64 written;
	__u64 lost;
	__u64 suspended;
	__u64 bytes_written;
	__u64 bytes_read;
};

struct bft_ioc_status {
	__u32 mode;		/* out: enum bft_mode */
	__u32 nr_probes;	/* out */
	__u32 nr_targets;	/* out */
	__u32 owner;		/* out: the owning socket's port id, 0 none */
	__u32 nr_cpus;		/* in: entries at cpus; out: possible CPUs */
	__u32 pad;		/* must be 0 */
	__u64 cpus;		/* in: user pointer to struct bft_ioc_cpu_stats[] */
};

#define BFT_IOC_STATUS		_IOWR(BFT_IOC_MAGIC, 2, struct bft_ioc_status)

#endif /* _UAPI_LINUX_BFTRACE_H */
