#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a bfhq trace's trace.speedscope.json against its calls.txt.

    speedscope-check.py TRACE_DIR [--dump]

Reads trace.speedscope.json with python's json and checks what speedscope's
evented importer needs: the schema URL, frames with names, one evented
profile per thread in microseconds, each event an "O" or a "C" with a frame
index in range, "at" never going back and inside startValue..endValue,
every "C" closing the newest open frame, none open at the end.  Then it
rebuilds each profile's calls and compares them with calls.txt and
methods.txt (read as scripts/pftrace-check.py reads them): the same calls,
in the same order, at the same depth.  Exit 0 if all holds, 1 with what
does not.  --dump prints the rebuilt profiles.
"""
import importlib.util
import json
import os
import sys

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def text_reader():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "pftrace_check", os.path.join(here, "pftrace-check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.calls_from_text


def profile_calls(p, frames):
    """The (depth, name) calls of evented profile p; ValueError if malformed."""
    name = p.get("name")
    if p.get("type") != "evented" or p.get("unit") != "microseconds":
        raise ValueError("%r: not an evented profile in microseconds" % name)
    if not isinstance(name, str):
        raise ValueError("a profile without a name")
    start, end = p["startValue"], p["endValue"]
    if not start <= end:
        raise ValueError("%s: startValue %r after endValue %r" % (name, start, end))
    stack, calls, at = [], [], start
    for e in p["events"]:
        f = e["frame"]
        if not isinstance(f, int) or not 0 <= f < len(frames):
            raise ValueError("%s: frame %r out of range" % (name, f))
        if not at <= e["at"] <= end:
            raise ValueError("%s: at %r after %r or past endValue %r" %
                             (name, e["at"], at, end))
        at = e["at"]
        if e["type"] == "O":
            calls.append((len(stack), frames[f]["name"]))
            stack.append(f)
        elif e["type"] == "C":
            if not stack or stack[-1] != f:
                raise ValueError("%s: C of frame %d, but %s is open" %
                                 (name, f, stack[-1] if stack else "nothing"))
            stack.pop()
        else:
            raise ValueError("%s: event type %r" % (name, e["type"]))
    if stack:
        raise ValueError("%s: %d frames never closed" % (name, len(stack)))
    return calls


def main():
    d = sys.argv[1]
    with open(d + "/trace.speedscope.json", encoding="utf-8") as f:
        doc = json.load(f)
    bad = 0
    try:
        if doc.get("$schema") != SCHEMA:
            raise ValueError("$schema is %r" % doc.get("$schema"))
        frames = doc["shared"]["frames"]
        if not all(isinstance(fr.get("name"), str) for fr in frames):
            raise ValueError("a frame without a name")
        got = {p["name"]: profile_calls(p, frames) for p in doc["profiles"]}
        if len(got) != len(doc["profiles"]):
            raise ValueError("two profiles with one name")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        print("trace.speedscope.json: %s" % e)
        return 1
    if "--dump" in sys.argv:
        for name, calls in got.items():
            print(name)
            for depth, call in calls:
                print("  " * (depth + 1) + call)
    want = text_reader()(d)
    for name, calls in want.items():
        if calls and got.get(name) != calls:
            print("%s: calls differ: %d in trace.speedscope.json, %d in "
                  "calls.txt" % (name, len(got.get(name, [])), len(calls)))
            bad += 1
    for name, calls in got.items():
        if calls and not want.get(name):
            print("%s: calls in trace.speedscope.json only" % name)
            bad += 1
    if not bad:
        print("trace.speedscope.json: %d profiles, %d frames, %d calls, as "
              "calls.txt says" % (len(got), len(frames),
                                  sum(len(c) for c in got.values())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
