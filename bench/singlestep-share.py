#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What share of a library's exported functions an entry uprobe must
single-step, and how many a generalised endbr64 rule would move off it.

    bench/singlestep-share.py [--only NAME,...] [LIB [PREFIX]]
        (default /usr/lib/x86_64-linux-gnu/libsqlite3.so.0, sqlite3_)

--only limits it to the functions named (a tracer's probe set) and prints
each one's class as "@fn NAME CLASS", so that a caller with per-function
hit counts can weigh the classes by calls.

x86-64 uprobes (arch/x86/kernel/uprobes.c, 6.1 and 6.12) emulate a
relative jmp, call or jcc, a nop and push %reg; every other instruction is
single-stepped, which costs far more (bench/notes.md).  The rule is
bfctl's (user/lib/symbols/bft_entry.h): past an endbr64, walk the function's first
instructions up to the first emulated one, at most 8 before it; if none of
them (that one included) is the target of a direct branch anywhere in the
library, none before it branches, names %rsp or touches the stack (push,
pop, call, ret, enter, leave, a memory operand based on %rsp or %rbp),
and, unless it is a push, the function has no indirect jump (a jump
table), a probe on the emulated instruction sees every entry and only
entries, with the return address still on top of the stack.  The
disassembly is objdump's (binutils), bfctl's is capstone's: the counts
must agree.

Prints one line per class and a summary:
    @res singlestep lib=L functions=N emulated_at_entry=E moved_by_rule=M
         still_single_stepped=S
"""
import re
import subprocess
import sys

args = sys.argv[1:]
only = None
if args[:1] == ["--only"] and len(args) > 1:
    only = set(filter(None, args[1].split(",")))
    args = args[2:]
lib = args[0] if args else "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"
prefix = args[1] if len(args) > 1 else "sqlite3_"

BRANCH = re.compile(r"^(j[a-z]+|call|ret|loop[a-z]*|jmp|syscall|sysenter|"
                    r"ud2|hlt|int3?|iret[a-z]*)\b")
STACK = re.compile(r"^(push|pop|call|ret|enter|leave)")
TARGET = re.compile(r"^[a-z]+\s+([0-9a-f]+) <")
WALK = 8
LINE = re.compile(r"^\s+([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(\S+)?\s*(.*)$")


def functions():
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", lib],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "Tt" and f[3].startswith(prefix):
            yield f[3], int(f[0], 16), int(f[1], 16)


def disassemble_all():
    """{address: (bytes, mnemonic, operands)} of every executable section,
    and the set of direct branch targets anywhere in it."""
    out = subprocess.run(["objdump", "-d", "-w", "-M", "att", lib],
                         capture_output=True, text=True, check=True).stdout
    insns, targets = {}, set()
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or not m.group(3):
            continue
        mn, ops = m.group(3), m.group(4).split("#")[0].strip()
        # objdump prints prefixes (bnd, notrack, rex.W...) as a word of
        # their own: the mnemonic is the last of them
        words = (mn + " " + ops).split()
        while len(words) > 1 and words[0] in ("bnd", "notrack", "rex.W",
                                              "rex.B", "rex", "lock",
                                              "rep", "repz", "repnz", "ds",
                                              "cs", "data16", "addr32"):
            words = words[1:]
        mn, ops = words[0], " ".join(words[1:])
        a = int(m.group(1), 16)
        insns[a] = (bytes.fromhex(m.group(2).replace(" ", "")), mn, ops)
        t = TARGET.match(mn + " " + ops)
        if t and BRANCH.match(mn):
            targets.add(int(t.group(1), 16))
    return insns, targets


def emulated(raw):
    """As the kernel decides it: by the bytes."""
    if raw in (b"\x90",):
        return True
    if (len(raw) == 1 and 0x50 <= raw[0] <= 0x57) or \
            (len(raw) == 2 and raw[0] == 0x41 and 0x50 <= raw[1] <= 0x57):
        return True
    if len(raw) > 1 and raw[0] == 0xf2:
        raw = raw[1:]
    return (len(raw) == 2 and (raw[0] == 0xeb or 0x70 <= raw[0] <= 0x7f)) or \
        (len(raw) == 5 and raw[0] in (0xe9, 0xe8)) or \
        (len(raw) == 6 and raw[0] == 0x0f and 0x80 <= raw[1] <= 0x8f)


def classify(fn_insns, targets):
    if not fn_insns:
        return "empty"
    start = fn_insns[0][0]
    if fn_insns[0][2] == "endbr64":
        fn_insns = fn_insns[1:]
    if not fn_insns:
        return "empty"
    if emulated(fn_insns[0][1]) and fn_insns[0][0] == start:
        return "emulated_at_entry"
    indirect = any(mn == "jmp" and ops.startswith("*")
                   for _, _, mn, ops in fn_insns)
    own = set()
    for _, _, mn, ops in fn_insns:
        m = TARGET.match(mn + " " + ops)
        if m and BRANCH.match(mn):
            own.add(int(m.group(1), 16))
    for i, (addr, raw, mn, ops) in enumerate(fn_insns[:WALK + 1]):
        if addr != start and (addr in targets or addr in own):
            return "single_stepped"
        if emulated(raw):
            if not i:
                return "emulated_at_entry"
            if indirect and mn not in ("push", "pushq"):
                return "single_stepped"
            return "moved_by_rule"
        if BRANCH.match(mn) or STACK.match(mn) or \
                re.search(r"%(rsp|esp|sp|spl)\b", ops) or \
                re.search(r"\(%(rsp|rbp|esp|ebp)\b|,%(rsp|rbp)\b", ops):
            return "single_stepped"
    return "single_stepped"


insns, targets = disassemble_all()
order = sorted(insns)


def function_insns(addr, size):
    import bisect
    i = bisect.bisect_left(order, addr)
    out = []
    while i < len(order) and order[i] < addr + size:
        a = order[i]
        out.append((a,) + insns[a])
        i += 1
    return out


counts = {}
seen = set()
for name, addr, size in functions():
    if only is not None and name not in only:
        continue
    seen.add(name)
    c = classify(function_insns(addr, size), targets)
    counts[c] = counts.get(c, 0) + 1
    if only is not None:
        print("@fn %s %s" % (name, c))
for name in sorted((only or set()) - seen):
    print("# %s: not a function of %s" % (name, lib), file=sys.stderr)
total = sum(counts.values())
for k in sorted(counts):
    print("# %-20s %4d" % (k, counts[k]))
print("@res singlestep lib=%s functions=%d emulated_at_entry=%d "
      "moved_by_rule=%d still_single_stepped=%d" %
      (lib, total, counts.get("emulated_at_entry", 0),
       counts.get("moved_by_rule", 0), counts.get("single_stepped", 0)))
