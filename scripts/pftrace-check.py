#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a bfhq trace's trace.pftrace against its calls.txt.

    pftrace-check.py TRACE_DIR [--dump]

Decodes trace.pftrace with a protobuf reader of its own (the wire format
and Perfetto's field numbers, nothing of bfhq's writer), rebuilds each
thread's calls from its TYPE_SLICE_BEGIN/END events, and compares them
with what calls.txt and methods.txt say: the same calls, in the same
order, at the same depth, every slice ended, slice times never going
back on a track (an instant may: an entries-only group is written once it
is complete, at the time of its first call).  Exit 0 if they agree, 1 with what differs.  --dump prints the
decoded threads.
"""
import sys

# TracePacket, TrackDescriptor, TrackEvent, InternedData field numbers
PACKET, TIMESTAMP, SEQ, EVENT, INTERNED, FLAGS, DESCRIPTOR = 1, 8, 10, 11, 12, 13, 60
BEGIN, END, INSTANT = 1, 2, 3


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, value) pairs of one message: ints for varints, bytes else."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            i += n
            if len(v) != n:
                raise ValueError("field %d: truncated" % f)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, v))
    return out


def one(fs, f, default=None):
    for k, v in fs:
        if k == f:
            return v
    return default


def decode(path):
    data = open(path, "rb").read()
    names, tracks, events = {}, {}, []
    cleared = False
    for f, pkt in fields(data):
        if f != PACKET:
            raise ValueError("Trace field %d is not a packet" % f)
        p = fields(pkt)
        if one(p, SEQ) != 1:
            raise ValueError("packet off sequence 1")
        flags = one(p, FLAGS, 0)
        if flags & 1:
            cleared = True
        for k, v in p:
            if k == INTERNED:
                for k2, en in fields(v):
                    if k2 == 2:     # event_names: EventName {iid 1, name 2}
                        e = fields(en)
                        names[one(e, 1)] = one(e, 2).decode()
        d = one(p, DESCRIPTOR)
        if d is not None:
            d = fields(d)
            th = one(d, 4)
            if th is not None:      # ThreadDescriptor {pid 1, tid 2, name 5}
                th = fields(th)
                tracks[one(d, 1)] = one(th, 5, b"").decode()
        ev = one(p, EVENT)
        if ev is not None:
            if not cleared or not flags & 2:
                raise ValueError("an event before the state was cleared, "
                                 "or without needing it")
            e = fields(ev)          # TrackEvent {type 9, track 11, name_iid 10}
            iid = one(e, 10)
            if iid is not None and iid not in names:
                raise ValueError("name iid %d used before interned" % iid)
            events.append((one(e, 11), one(p, TIMESTAMP), one(e, 9),
                           names.get(iid)))
    return tracks, events


def calls_from_pftrace(tracks, events):
    out = {}
    for track, ts, typ, name in events:
        if track not in tracks:
            continue                # the markers' track
        t = out.setdefault(tracks[track], {"calls": [], "depth": 0, "ts": 0})
        if typ == INSTANT:
            continue                # an entries-only group comes at its end
        if ts < t["ts"]:
            raise ValueError("%s: time goes back (%d after %d)" %
                             (tracks[track], ts, t["ts"]))
        t["ts"] = ts
        if typ == BEGIN:
            t["calls"].append((t["depth"], name))
            t["depth"] += 1
        elif typ == END:
            if not t["depth"]:
                raise ValueError("%s: an end without a begin" % tracks[track])
            t["depth"] -= 1
    return out


def calls_from_text(d):
    sigs = {}
    for line in open(d + "/methods.txt", encoding="utf-8", errors="replace"):
        mid, _, sig = line.rstrip("\n").split(" ", 2)
        sigs[mid] = sig
    out = {}
    for line in open(d + "/calls.txt", encoding="utf-8", errors="replace"):
        name, _, toks = line.rstrip("\n").rpartition(":")
        stack, calls = [], []
        for tok in toks.split():
            k, mid = tok[0], tok[1:]
            if k == "e":
                calls.append((len(stack), sigs.get(mid, "#" + mid)))
                stack.append(mid)
            elif k in "xu" and mid in stack:
                while stack.pop() != mid:
                    pass
            elif k == "|":
                stack = []
        out[name] = calls
    return out


def main():
    d = sys.argv[1]
    tracks, events = decode(d + "/trace.pftrace")
    got = calls_from_pftrace(tracks, events)
    want = calls_from_text(d)
    if "--dump" in sys.argv:
        for name, t in got.items():
            print(name)
            for depth, call in t["calls"]:
                print("  " * (depth + 1) + call)
    bad = 0
    for name, calls in want.items():
        if not calls:
            continue
        t = got.get(name)
        if t is None:
            print("%s: no track in trace.pftrace" % name)
            bad += 1
        elif t["calls"] != calls:
            print("%s: calls differ: %d in trace.pftrace, %d in calls.txt"
                  % (name, len(t["calls"]), len(calls)))
            for i, (a, b) in enumerate(zip(t["calls"], calls)):
                if a != b:
                    print("  first at call %d: %r, not %r" % (i, a, b))
                    break
            bad += 1
        elif t["depth"]:
            print("%s: %d slices never end" % (name, t["depth"]))
            bad += 1
    for name, t in got.items():
        if t["calls"] and not want.get(name):
            print("%s: calls in trace.pftrace only" % name)
            bad += 1
    if not bad:
        print("trace.pftrace: %d threads, %d calls, as calls.txt says" %
              (len(got), sum(len(t["calls"]) for t in got.values())))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
