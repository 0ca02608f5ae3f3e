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
single-stepped, which costs far more (bench/notes.md).  The rule measured
here: past an endbr64, walk the function's first instructions up to the
first emulated one; if none of them (that one included) is the target of a
branch in the function, and none before it branches, or names %rsp or
touches the stack (push, pop, call, ret, enter, leave), a probe on the
emulated instruction sees every entry and only entries, with the return
address still on top of the stack.  The disassembly is objdump's (binutils).

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

BRANCH = re.compile(r"^(j[a-z]+|call|ret|loop[a-z]*|jmp)\b")
STACK = re.compile(r"^(push|pop|call|ret|enter|leave)")
TARGET = re.compile(r"^[a-z]+\s+([0-9a-f]+) <")


def functions():
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", lib],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "Tt" and f[3].startswith(prefix):
            yield f[3], int(f[0], 16), int(f[1], 16)


def disassemble(addr, size):
    """[(address, mnemonic, operands)] of one function."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "att",
                          "--start-address=%#x" % addr,
                          "--stop-address=%#x" % (addr + size), lib],
                         capture_output=True, text=True, check=True).stdout
    insns = []
    for line in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return insns


def emulated(mn, ops):
    if mn in ("jmp", "call") and TARGET.match(mn + " " + ops):
        return True
    if re.match(r"^j[a-z]+$", mn) and TARGET.match(mn + " " + ops):
        return True
    if mn == "nop" and not ops:
        return True
    return mn in ("push", "pushq") and re.fullmatch(r"%r[0-9a-z]+", ops) is not None


def classify(insns):
    if not insns:
        return "empty"
    if insns[0][1] == "endbr64":
        insns = insns[1:]
    if not insns:
        return "empty"
    if emulated(insns[0][1], insns[0][2]):
        return "emulated_at_entry"
    targets = set()
    for _, mn, ops in insns:
        m = TARGET.match(mn + " " + ops)
        if m and BRANCH.match(mn):
            targets.add(int(m.group(1), 16))
    for i, (addr, mn, ops) in enumerate(insns):
        if addr in targets:
            return "single_stepped"
        if emulated(mn, ops):
            return "moved_by_rule" if i else "emulated_at_entry"
        if BRANCH.match(mn) or STACK.match(mn) or "%rsp" in ops or \
                "%esp" in ops:
            return "single_stepped"
    return "single_stepped"


counts = {}
seen = set()
for name, addr, size in functions():
    if only is not None and name not in only:
        continue
    seen.add(name)
    c = classify(disassemble(addr, size))
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
