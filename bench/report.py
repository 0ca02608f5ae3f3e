#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw outputs of scripts/bench into bench/results.md and .json.

Inputs are line-oriented (see bench/guest-bench.sh):
  @info KEY VALUE...      @cmd ID COMMAND...      @res ID key=value...
  @codec LINE             (bench_codec's own output, native only)
Each per-call figure is the median of its repetitions; a guest's ratio to
its floor is the median of the ratios taken within each repetition, with
their range; every figure carries its ratio (to the floor, or to what it is
compared with) and the command that reproduces it.  bench/notes.md, if present, is appended verbatim: it
holds the written analysis of the limits, which numbers alone cannot give.

Two tables drive the output: CLAIMS, the targets the figures are held to
(results.json's "targets", the "Targets" table), and MD_LAYOUT, the
sections of results.md in order.
"""
import argparse
import collections
import datetime
import json
import os
import re
import statistics
import sys

# Commands are shown relative to the repository root, where they run.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
BYTEFROG_V1_CALL = 15 + 17  # MethodEntry + MethodExit, protocol 1
UFTRACE_CALL = 32           # two 16-byte uftrace records (entry, exit)


def parse(path, prof=None):
    info, cmds, res, codec = {}, {}, {}, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("@info "):
                parts = line.split(" ", 2)
                info[parts[1]] = (parts[2] if len(parts) > 2 else "").replace(ROOT, "")
            elif line.startswith("@cmd "):
                parts = line.split(" ", 2)
                cmds[parts[1]] = (parts[2] if len(parts) > 2 else "").replace(ROOT, "")
            elif line.startswith("@res "):
                parts = line.split(" ")
                rec = {}
                for kv in parts[2:]:
                    if "=" in kv:
                        k, v = kv.split("=", 1)
                        rec[k] = v
                res.setdefault(parts[1], []).append(rec)
            elif line.startswith("@codec "):
                codec.append(line[len("@codec "):])
            elif line.startswith("@prof ") and prof is not None:
                parts = line.split(" ", 3)
                if len(parts) == 4:
                    prof.setdefault(parts[1], []).append(
                        {"pct": num(parts[2].rstrip("%")), "symbol": parts[3]})
    return info, cmds, res, codec


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def median_of(recs, key):
    vals = [num(r.get(key)) for r in recs]
    vals = [v for v in vals if v is not None]
    return (statistics.median(vals), vals) if vals else (None, [])


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}"


def ratio_range(d):
    """' (lo-hi)' of a figure's per-repetition ratios to its floor, or ''."""
    rr = [x for x in d.get("ratio_reps") or [] if x is not None]
    if len(rr) < 2 or min(rr) == max(rr) or max(rr) < 0.05:
        return ""  # the floor itself, the untraced loop
    return f" ({min(rr):.2f}-{max(rr):.2f})"


def fmt_ratio(v):
    return "n/a" if v is None else f"{v:.2f}x"


def seen_text(recs):
    out = []
    for r in recs:
        s, e = r.get("seen", "-"), r.get("expect", "-")
        if s in ("-", "") and e in ("-", ""):
            continue
        if "/" in s:  # floor: entries/returns
            out.append(s + (" of " + e if e not in ("-", "") else ""))
        else:
            out.append(s + (" of " + e if e not in ("-", "") else ""))
    if not out:
        return "-"
    return out[0] if len(set(out)) == 1 else ", ".join(out)


def complete(recs):
    """True when every repetition saw every event it should have."""
    for r in recs:
        s, e = r.get("seen", "-"), r.get("expect", "-")
        if e in ("-", ""):
            continue
        if "/" in s:
            if any(x != e for x in s.split("/")):
                return False
        elif s != e:
            return False
    return True


def guest_report(kver, path):
    prof = {}
    info, cmds, res, _ = parse(path, prof)
    g = {"kernel": kver, "guest": info, "per_call": {}, "cet": {},
         "scaling": {}, "size": None, "loss": [], "collector_cpu": None,
         "counters": None,
         "profile": {k: {"samples": v, "command": cmds.get("prof." + k, ""),
                         "ns_per_call": median_of(res.get("prof." + k, []), "ns")[0]}
                     for k, v in prof.items()}}

    # Under TCG a measurement moves by tens of per cent from one
    # repetition to the next, the floor with it; each repetition of the
    # main loop (bench/guest-bench.sh) runs the tracers and the floor side
    # by side, so a ratio is taken within each and the median of those is
    # the figure, with their range.  Measurements of loops of their own
    # (paired=False) keep the ratio of the medians.
    def fig(rid, floor_id, extra=None, paired=True):
        recs = res.get(rid, [])
        med, vals = median_of(recs, "ns")
        fl = res.get(floor_id, []) if floor_id else []
        fmed, fvals = median_of(fl, "ns")
        # one per repetition, None where either run failed, so that two
        # tools' lists stay aligned
        within = [v / f if v is not None and f else None
                  for v, f in zip((num(r.get("ns")) for r in recs), (num(r.get("ns")) for r in fl))]
        if not paired or len(recs) != len(fl):
            within = []
        got = [x for x in within if x is not None]
        d = {"ns_per_call": med, "ns_reps": vals, "floor_ns_reps": fvals,
             "ratio_reps": within, "paired": bool(got),
             "ratio_to_floor": statistics.median(got) if got else ratio(med, fmed),
             "floor": floor_id,
             "seen": seen_text(recs), "complete": complete(recs),
             "command": cmds.get(rid, "")}
        if extra:
            d.update(extra)
        return d

    for t in ("untraced", "floor", "bftrace", "bftrace_noreader", "bpftrace", "perf"):
        g["per_call"][t] = fig("plain." + t, "plain.floor", paired=t != "bftrace_noreader")
    for t, fl in (("untraced", "cet.floor_func4"),
                  ("floor_func", "cet.floor_func"),
                  ("floor_func4", "cet.floor_func4"),
                  ("bftrace_func", "cet.floor_func"),
                  ("bftrace_func4", "cet.floor_func4"),
                  ("bpftrace", "cet.floor_func")):
        g["cet"][t] = fig("cet." + t, fl)
    b4 = g["cet"]["bftrace_func4"]["ns_per_call"]
    for d in g["cet"].values():
        d["ratio_to_bftrace_func4"] = ratio(d["ns_per_call"], b4)

    for t in ("untraced", "floor", "bftrace"):
        two = fig(f"scale.{t}.2", "scale.floor.2")
        two["ratio_to_1_thread"] = ratio(two["ns_per_call"],
                                         g["per_call"][t]["ns_per_call"])
        g["scaling"][t] = {"1": g["per_call"][t], "2": two}

    # bftrace's collector CPU during the single-thread per-call runs
    b = res.get("plain.bftrace", [])
    pct = []
    for r in b:
        t, w, tk = num(r.get("coll_ticks")), num(r.get("wall_ns")), num(r.get("tick"))
        if t is not None and w and tk:
            pct.append(100.0 * t / tk / (w / 1e9))
    g["per_call"]["bftrace"]["collector_cpu_pct"] = statistics.median(pct) if pct else None
    mb, _ = median_of(b, "bytes")
    g["per_call"]["bftrace"]["ring_bytes_median"] = mb

    def size_of(rid):
        s = (res.get(rid) or [None])[0]
        if not s:
            return None
        calls = num(s.get("calls"))
        byts = num(s.get("bytes"))
        kinds = []
        for k in filter(None, s.get("kinds", "").split(",")):
            name, recs_, kb = k.split(":")
            kinds.append({"kind": name, "records": int(recs_), "bytes": int(kb),
                          "bytes_per_call": int(kb) / calls if calls else None})
        per = byts / calls if calls and byts is not None else None
        return {"bytes": byts, "calls": calls, "bytes_per_call": per,
                "time_res_ns": num(s.get("time_res_ns")),
                "ratio_to_bytefrog_v1": ratio(per, BYTEFROG_V1_CALL),
                "ratio_to_uftrace": ratio(per, UFTRACE_CALL),
                "ns_per_call": num(s.get("ns")),
                "seen": s.get("seen"), "expect": s.get("expect"),
                "kinds": kinds, "command": cmds.get(rid, "")}
    g["size"] = size_of("size")
    g["size_by_res"] = [x for x in (size_of(r) for r in ("size", "size.res8000", "size.res64000")) if x]

    # a C++ throw through DEPTH frames, traced (return probes + hooks) vs not
    g["throws"] = []
    for depth in ("1", "10"):
        un = fig("throw.untraced." + depth, None)
        tr = fig("throw.bftrace." + depth, None)
        if un["ns_per_call"] is None and tr["ns_per_call"] is None:
            continue
        lost = sum(int(r.get("lost", "0") or 0) for r in res.get("throw.bftrace." + depth, []))
        g["throws"].append({"depth": int(depth), "untraced_ns": un["ns_per_call"],
                            "bftrace_ns": tr["ns_per_call"],
                            "ratio_to_untraced": ratio(tr["ns_per_call"], un["ns_per_call"]),
                            "caught": tr["seen"], "lost": lost,
                            "command_untraced": un["command"], "command": tr["command"]})

    steps = []
    for rid in sorted((k for k in res if k.startswith("loss.")),
                      key=lambda k: (int(k.split(".")[1]) or 10**12)):
        r = res[rid][0]
        cps = num(r.get("calls_per_s"))
        el = num(r.get("elapsed_ns"))
        tk, t = num(r.get("tick")), num(r.get("coll_ticks"))
        steps.append({
            "paced_calls_per_s_per_thread": int(r.get("rate", 0)) or None,
            "events_per_s": 2 * cps if cps else None,
            "lost": int(r.get("lost", "0") or 0),
            "seen": r.get("seen"), "expect": r.get("expect"),
            "complete": r.get("seen") == r.get("expect"),
            "collector_cpu_pct": (100.0 * t / tk / (el / 1e9)) if (t is not None and tk and el) else None,
            "command": cmds.get(rid, "")})
    g["loss"] = steps
    ok = [x["events_per_s"] for x in steps
          if x["lost"] == 0 and x["complete"] and x["events_per_s"]]
    top = max((x["events_per_s"] or 0 for x in steps), default=0)
    g["loss_summary"] = {"max_zero_loss_events_per_s": max(ok) if ok else None,
                         "max_events_per_s": top or None,
                         "any_loss": any(x["lost"] for x in steps)}
    flat = [x for x in steps if x["paced_calls_per_s_per_thread"] is None]
    if flat:
        g["collector_cpu"] = {"events_per_s": flat[0]["events_per_s"],
                              "cpu_pct": flat[0]["collector_cpu_pct"],
                              "command": flat[0]["command"]}
    g["counters"] = counters_of(res, cmds)
    g["bpf"] = bpf_of(res, cmds, info, g, fig)
    g["sqlite"] = sqlite_of(res, cmds, "sqlite." + kver)
    g["live_view"] = live_view_of(res, cmds)
    g["usdt"] = usdt_of(res, cmds)
    return g


def usdt_of(res, cmds):
    """bench/usdt-cost.sh: per site, the median ns per hit of each tracer
    minus the untraced pass's, and what each counted."""
    out = {}
    for site in ("nop1", "nop5"):
        recs = [r for r in res.get("usdt", []) if r.get("site") == site]
        if not recs:
            continue
        base, _ = median_of(recs, "untraced")
        row = {"untraced_ns": base, "commands": {k.split(".")[-1]: v for k, v in cmds.items()
                                                   if k.startswith("usdt.%s." % site)}}
        for t in ("kmod", "bpf", "bpftrace"):
            if not any(t in r for r in recs):
                continue
            ns, _ = median_of(recs, t)
            row[t + "_ns"] = minus(ns, base)
            row["seen_" + t] = sorted({r.get("seen_" + t) for r in recs})
        row["bpf_vs_bpftrace"] = ratio(row.get("bpf_ns"), row.get("bpftrace_ns"))
        row["kmod_vs_bpftrace"] = ratio(row.get("kmod_ns"), row.get("bpftrace_ns"))
        out[site] = row
    return out


def sqlite_of(res, cmds, rid):
    """bench/sqlite-api.sh: per traced call of libsqlite3's API, bftrace
    against bpftrace, on the same probes, with the probes' counts checked.
    Each repetition's cost is its traced median round less its own
    untraced one, over the calls traced in a round; the figure is the
    median of the repetitions, with their range."""
    recs = res.get(rid, [])
    if not recs:
        return None
    tools = ("bftrace_ns", "bftrace_at_entry_ns", "bpftrace_empty_ns", "bpftrace_ns")
    med = {k: median_of(recs, k)[0] for k in ("untraced_ns", "hits", "api_calls") + tools}
    hits = med["hits"]
    rounds = num(recs[0].get("rounds")) or 1

    def cost(k):
        per = []
        for r in recs:
            t, u, h = num(r.get(k)), num(r.get("untraced_ns")), num(r.get("hits")) or hits
            if t is not None and u is not None and h:
                per.append((t - u) * rounds / h)
        if not per:
            return None, None
        return statistics.median(per), (min(per), max(per))
    wrong = []
    for r in recs:
        h = r.get("hits")
        if not h or h == "0":
            wrong.append(f"rep {r.get('rep')}: bpftrace counted no call")
            continue
        if r.get("returns") != h:
            wrong.append(f"rep {r.get('rep')}: bpftrace {h} entries, {r.get('returns')} returns")
        for k, what in (("bftrace", "bftrace"), ("bftrace_at_entry", "bftrace --at-entry")):
            seen = r.get(k + "_seen")
            if seen is None and k == "bftrace_at_entry":
                continue  # outputs from before the at-entry run was counted
            if seen != str(2 * int(h)):
                wrong.append(f"rep {r.get('rep')}: {what} {seen} events for {h} calls "
                             f"({r.get(k + '_lost')} lost)")
        fs = r.get("floor_seen", "-")
        if fs not in ("-", "") and fs != f"{h}/{h}":
            wrong.append(f"rep {r.get('rep')}: floor programs ran {fs} times for {h} calls")
    out = {"reps": len(recs), "rows": num(recs[0].get("rows")), "rounds": rounds,
           "probes": num(recs[0].get("probes")), "api_calls": med["api_calls"], "hits": hits,
           "untraced_ns": med["untraced_ns"], "counts_right": not wrong, "count_errors": wrong,
           "floor_seen": recs[0].get("floor_seen", "-"),
           "commands": {k: cmds.get(f"{rid}.{k}", "") for k in
                        ("untraced", "bftrace", "bftrace_at_entry", "bpftrace_empty", "bpftrace",
                         "floor_count", "classes")}}
    for k in tools:
        out[k] = med[k]
        out[k.replace("_ns", "_cost_ns")], out[k.replace("_ns", "_cost_range")] = cost(k)
    def pos_ratio(a, b):  # a negative cost is noise, not a ratio
        return ratio(out[a], out[b]) if (out[a] or 0) > 0 and (out[b] or 0) > 0 else None
    out["bftrace_vs_bpftrace_empty"] = pos_ratio("bftrace_cost_ns", "bpftrace_empty_cost_ns")
    out["bftrace_vs_bpftrace"] = pos_ratio("bftrace_cost_ns", "bpftrace_cost_ns")
    out["bftrace_vs_at_entry"] = pos_ratio("bftrace_cost_ns", "bftrace_at_entry_cost_ns")
    fns = res.get("sqlite_fn." + rid.split(".", 1)[1], [])
    if fns:
        by = {}
        for f in fns:
            c = by.setdefault(f.get("class"), {"probes": 0, "hits": 0})
            c["probes"] += 1
            c["hits"] += (num(f.get("hits")) or 0) / rounds
        tot_p = sum(c["probes"] for c in by.values())
        tot_h = sum(c["hits"] for c in by.values())
        ss = [by.get(k, {"probes": 0, "hits": 0}) for k in ("moved_by_rule", "single_stepped")]
        out["single_step"] = {
            "classes": by, "functions": [{"name": f.get("name"), "class": f.get("class"),
                                          "hits": (num(f.get("hits")) or 0) / rounds} for f in fns],
            "probes_single_stepped": ss[0]["probes"] + ss[1]["probes"], "probes": tot_p,
            "calls_single_stepped": ss[0]["hits"] + ss[1]["hits"], "calls": tot_h,
            "probes_after_rule": ss[1]["probes"], "calls_after_rule": ss[1]["hits"]}
        whole = (res.get("sqlite_share_all." + rid.split(".", 1)[1]) or [None])[0]
        if whole:
            out["single_step"]["library"] = {k: num(whole.get(k)) for k in
                                             ("functions", "emulated_at_entry", "moved_by_rule",
                                              "still_single_stepped")}
    return out


def bpf_of(res, cmds, info, g, fig):
    """The BPF backend in the same guest, against the floor, the module and bpftrace."""
    if info.get("bpf_skip"):
        return {"skip": info["bpf_skip"]}
    if not res.get("plain.bpf"):
        return None

    def per_call(rid, floor_id, module, bpftrace):
        d = fig(rid, floor_id, paired=False)  # a loop after the main one
        d["ratio_to_module"] = ratio(d["ns_per_call"], module["ns_per_call"])
        d["ratio_to_bpftrace"] = ratio(d["ns_per_call"], bpftrace["ns_per_call"])
        per = []
        for r in res.get(rid, []):
            b, e = num(r.get("bytes")), num(r.get("expect"))
            if b is not None and e:
                per.append(b / (e / 2))     # expect counts entry + exit
        d["bytes_per_call"] = statistics.median(per) if per else None
        return d
    out = {"links": info.get("bpf_links"),
           "plain": per_call("plain.bpf", "plain.floor", g["per_call"]["bftrace"],
                             g["per_call"]["bpftrace"]),
           "cet": per_call("cet.bpf_func4", "cet.floor_func4", g["cet"]["bftrace_func4"],
                           g["cet"]["bpftrace"]),
           "flat": None}
    r = (res.get("bpf.flat") or [None])[0]
    if r:
        cps, el = num(r.get("calls_per_s")), num(r.get("elapsed_ns"))
        tk, t = num(r.get("tick")), num(r.get("coll_ticks"))
        out["flat"] = {"events_per_s": 2 * cps if cps else None,
                       "lost": int(r.get("lost", "0") or 0),
                       "seen": r.get("seen"), "expect": r.get("expect"),
                       "collector_cpu_pct": (100.0 * t / tk / (el / 1e9))
                       if (t is not None and tk and el) else None,
                       "command": cmds.get("bpf.flat", "")}
    return out


def counters_of(res, cmds):
    """bench/guest-counters.sh: the counters agent at 10 Hz, 1000 probes,
    and, measured in the same run, the collector once the inspector left."""
    c10, c0 = res.get("counters.10hz", []), res.get("counters.none", [])
    if not c10:
        return None
    c10, c0 = c10[0], (c0[0] if c0 else {})
    on, off = num(c10.get("cpu_pct")), num(c0.get("cpu_pct"))
    return {"cpu_pct_10hz": on, "cpu_pct_none": off,
            "sampling_pct": on - off if on is not None and off is not None else None,
            "sample_us": num(c10.get("sample_us")), "status_us": num(c10.get("status_us")),
            "write_us": num(c10.get("write_us")),
            "table_reads": num(c0.get("table_reads")),
            "table_read_us": num(c0.get("table_read_us")),
            "counters": num(c10.get("counters")),
            "correct": c10.get("correct") == "1",
            "command": cmds.get("counters.10hz", ""),
            # bench-wakefloor: % of a core at 10 Hz with no agent at all
            "floor": {v: num(((res.get("counters.floor." + v) or [{}])[0]).get("pct_10hz"))
                      for v in ("wake", "status", "send", "all")}}


def counters_line(where, c):
    return (f"- CPU while sampling {fmt(c['counters'])} counters at 10 Hz, 1000 probes "
            f"attached ({where}): {fmt(c['cpu_pct_10hz'], 2)} % of a core; "
            f"{fmt(c['cpu_pct_none'], 2)} % in the same run once the inspector left, so "
            f"sampling itself {fmt(c['sampling_pct'], 2)} %; one sample {fmt(c['sample_us'])} us "
            f"of CPU ({fmt(c['status_us'])} us of it reading the kernel's status) and "
            f"{fmt(c['write_us'])} us writing it to the inspector; the method "
            f"table read {fmt(c['table_reads'])} times in the run, {fmt(c['table_read_us'])} us "
            f"each (sampled calls {'equal' if c['correct'] else 'DIFFER FROM'} the target's "
            f"model; {code(c['command'])}). {floor_text(c)}")


def floor_text(c):
    f = c.get("floor") or {}
    if f.get("wake") is None:
        return ""
    send = f"with a 32-byte TCP send on loopback {fmt(f['send'], 2)} %"
    if f.get("status") is None:  # the BPF backend: no /dev/bftrace to ask
        parts = f"{send} (no status ioctl without the module)"
    else:
        parts = (f"with the status ioctl {fmt(f['status'], 2)} %, {send}, "
                 f"with both {fmt(f['all'], 2)} %")
    return (f"The floor, measured after it in the same run by `bench-wakefloor 50` (no agent, "
            f"% of a core at 10 Hz): a bare wake {fmt(f['wake'], 2)} %, {parts}.")


# The collector's symbols by pipeline stage (perf cannot tell the two
# static "lookup" functions apart: they go to "other").
STAGES = (
    ("decode (bft_stream)", ("bft_stream_feed", "step", "emit")),
    ("merge by time (bft_merge)", ("bft_merge_push", "bft_merge_run", "bft_merge_feed",
                                   "sift_down", "sift_up", "push_cb")),
    ("call trees (bft_calltree)", ("bft_calltree_feed", "get_thread", "enter", "leave",
                                   "exit_one")),
    ("per-event glue (collector pipeline.c)", ("on_call", "on_record", "send_event",
                                               "thread_get", "method_of", "rel_ms",
                                               "methods_get", "methods_excluded",
                                               "source_is_kernel", "source_mode")),
    ("Bytefrog encoding and queueing", ("hq_data_msg", "bfp_encode", "bfp_put_", "enc_",
                                        "bft_buf_append", "bft_buf_reserve", "bft_buf_consume",
                                        "idset_add", "bfp_id_sequenced", "push_end",
                                        "memcpy", "__memmove", "__memcpy")),
    ("sending (hq_flush and the kernel)", ("hq_flush", "flush_fd", "__send", "send")),
)


def stages(prof):
    out = {name: 0.0 for name, _ in STAGES}
    out["other"] = 0.0
    for p in prof:
        sym = p["symbol"].split(".")[0]
        name = None
        if p.get("kernel"):
            name = "sending (hq_flush and the kernel)"
        else:
            for stage, prefixes in STAGES:
                if any(sym == x or (x.endswith("_") and sym.startswith(x)) or
                       (x.startswith("__") and sym.startswith(x)) or
                       (x == "memcpy" and sym.startswith("memcpy")) for x in prefixes):
                    name = stage
                    break
        out[name or "other"] += p["pct"]
    return out


def native_report(path, profile_path):
    if not path or not os.path.exists(path):
        return None
    info, cmds, res, codec = parse(path)
    n = {"host": info, "codec": codec, "commands": cmds}
    st = (res.get("stream") or [{}])[0]
    n["stream"] = {"events": num(st.get("events")), "bytes": num(st.get("bytes")),
                   "cpus": num(st.get("cpus")), "command": cmds.get("stream", "")}
    for key in ("collector_flow", "collector_bytefrog"):
        r = (res.get(key) or [None])[0]
        if not r:
            continue
        ev = num(r.get("events"))
        cpu = (num(r.get("user")) or 0) + (num(r.get("sys")) or 0)
        n[key] = {"events": ev, "cpu_s": cpu, "wall_s": num(r.get("wall")),
                  "events_per_cpu_s": ev / cpu if ev and cpu else None,
                  "ratio_to_target": (ev / cpu / 20e6) if ev and cpu else None,
                  "sent": num(r.get("sent")), "wire_bytes": num(r.get("wire_bytes")),
                  "command": cmds.get(key, "")}
    prof = []
    if profile_path and os.path.exists(profile_path):
        with open(profile_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = re.match(r"\s*([0-9.]+)%\s+\[([.k])\]\s+(.*\S)", line)
                if m:
                    prof.append({"pct": float(m.group(1)), "symbol": m.group(3),
                                 "kernel": m.group(2) == "k"})
    n["profile"] = prof
    hl = (res.get("hq_large") or [None])[0]
    if hl:
        n["hq_large"] = {k: num(v) for k, v in hl.items()}
        n["hq_large"]["command"] = cmds.get("hq_large", "")
    n["bpf_native"] = [{k: (v if k in ("build", "floor_at", "bpf_at", "bpftrace_at")
                            else [num(x) for x in v.split(",")] if k.startswith("reps_")
                            else num(v))
                        for k, v in r.items()} for r in res.get("bpf_native", [])]
    for raw, r in zip(res.get("bpf_native", []), n["bpf_native"]):
        r["floor_seen_text"] = raw.get("floor_seen")
        r["floor_multi_seen_text"] = raw.get("floor_multi_seen")
    n["bpf_native_skip"] = info.get("bpf_native_skip")
    n["inline_native"] = [{k: (v if k == "build"
                               else [num(x) for x in v.split(",")] if k.startswith("reps_")
                               else num(v))
                           for k, v in r.items()} for r in res.get("inline_native", [])]
    n["inline_sqlite"] = [{k: num(v) for k, v in r.items()} for r in res.get("inline_sqlite", [])]
    n["inline_native_commands"] = {k: v for k, v in cmds.items()
                                   if k.startswith(("inline_native.", "inline_sqlite."))}
    n["live_view"] = live_view_of(res, cmds)
    n["live_view_udp"] = live_view_of(res, cmds, "live_view_udp")
    n["counters"] = counters_of(res, cmds)
    n["sqlite"] = sqlite_of(res, cmds, "sqlite.native")
    n["bpf_native_commands"] = {k: v for k, v in cmds.items() if k.startswith("bpf_native.")}
    n["profile_stages"] = stages(prof)
    hp, _ = median_of(res.get("host.bpftrace_plain", []), "ns")
    hc, _ = median_of(res.get("host.bpftrace_cet", []), "ns")
    if hp or hc:
        n["host_bpftrace"] = {"plain_ns": hp, "cet_ns": hc, "cet_vs_plain": ratio(hc, hp),
                              "command_plain": cmds.get("host.bpftrace_plain", ""),
                              "command_cet": cmds.get("host.bpftrace_cet", "")}
    n["profile_command"] = cmds.get("collector_profile", "")
    n["usdt"] = usdt_of(res, cmds)
    return n


def live_view_of(res, cmds, key="live_view"):
    """scripts/live-view-test.py's delays and stages, or None; key
    live_view_udp: its run with the data over UDP."""
    delays = sorted(num(r.get("delay_ms")) for r in res.get(key, []))
    if not delays:
        return None
    lv = {"runs": len(delays), "median_ms": statistics.median(delays),
          "max_ms": delays[-1], "delays_ms": delays, "command": cmds.get(key, "")}
    sse = [num(r.get("delay_ms")) for r in res.get(key + "_sse", [])]
    if sse:
        lv["sse_median_ms"] = statistics.median(sse)
    by_stage = {}
    for r in res.get(key + "_stage", []):
        by_stage.setdefault(r.get("stage"), []).append(num(r.get("ms")))
    lv["stages"] = [{"stage": k, "runs": len(v), "median_ms": statistics.median(v),
                     "max_ms": max(v)} for k, v in by_stage.items()]
    return lv


def minus(a, b):
    return a - b if a is not None and b is not None else None


def within(r, a, b, op):
    """op(a, b) within each repetition of bench/bpf-native.sh's loop
    (its reps_* lists), None where either run failed; [] without them."""
    xs, ys = r.get("reps_" + a), r.get("reps_" + b)
    if not xs or not ys or len(xs) != len(ys):
        return []
    return [op(x, y) if x is not None and y else None for x, y in zip(xs, ys)]


def paired(r, a, b, fallback, op=lambda x, y: x / y):
    """The median of within(), with the list, or the fallback (the
    figure from the medians) for raw outputs without the lists."""
    w = within(r, a, b, op)
    got = [x for x in w if x is not None]
    return (statistics.median(got) if got else fallback), w


def native_floor(native):
    """bench/bpf-native.sh per build: bftrace (BPF backend), the floor
    (empty programs) and bpftrace, per traced call, as ratios to the floor
    at the same site.  As in the guests, a ratio is the median of the
    ratios within each repetition, where the tools ran side by side, and
    "below" is counted per repetition."""
    out = {}
    for r in (native or {}).get("bpf_native", []):
        if r.get("floor_ns") is None:
            continue
        b = r["build"]
        bpf_at_func = r.get("floor_func_ns") if b == "cet" else r.get("floor_ns")
        at_func = "floor_func" if b == "cet" else "floor"
        vs_floor, vs_floor_reps = paired(r, "bpf", "floor", ratio(r.get("bpf_ns"), r.get("floor_ns")))
        bte_floor, bte_floor_reps = paired(r, "bpftrace_empty", at_func,
                                           ratio(r.get("bpftrace_empty_ns"), bpf_at_func))
        vs_multi, vs_multi_reps = paired(r, "bpf", "floor_multi",
                                         ratio(r.get("bpf_ns"), r.get("floor_multi_ns")))
        below = [x for x in within(r, "bpf", "bpftrace_empty", lambda x, y: x < y)
                 if x is not None]
        d = {"calls": r.get("calls"), "untraced_ns": r.get("untraced_ns"),
             "vs_floor_reps": vs_floor_reps, "bpftrace_empty_vs_floor_reps": bte_floor_reps,
             "vs_floor_multi_reps": vs_multi_reps,
             "below_bpftrace": sum(below) if below else None, "pairs": len(below),
             "floor_ns": r.get("floor_ns"), "floor_at": r.get("floor_at"),
             "floor_func_ns": r.get("floor_func_ns"),
             "bftrace_ns": r.get("bpf_ns"), "bpftrace_empty_ns": r.get("bpftrace_empty_ns"),
             "bpftrace_ns": r.get("bpftrace_ns"), "bpftrace_calls": r.get("bpftrace_calls"),
             "bftrace_vs_floor": vs_floor,
             "bftrace_cost_vs_floor_cost": ratio(r.get("bpf_cost_ns"), r.get("floor_cost_ns")),
             # bpftrace probes func; its floor is the floor at func
             "bpftrace_empty_vs_floor": bte_floor,
             "bpftrace_vs_floor": paired(r, "bpftrace", at_func,
                                         ratio(r.get("bpftrace_ns"), bpf_at_func))[0],
             "bftrace_vs_bpftrace_empty": paired(r, "bpf", "bpftrace_empty",
                                                 ratio(r.get("bpf_ns"), r.get("bpftrace_empty_ns")))[0],
             "seen": f"{fmt(r.get('bpf_seen'))} of {fmt(r.get('bpf_expect'))}, "
                     f"{fmt(r.get('bpf_lost'))} lost",
             "floor_seen": r.get("floor_seen_text"), "floor_expect": r.get("floor_expect"),
             # empty programs on uprobe_multi links, bftrace's kind
             "floor_multi_ns": r.get("floor_multi_ns"),
             "floor_multi_seen": r.get("floor_multi_seen_text"),
             "floor_multi_vs_floor": paired(r, "floor_multi", "floor",
                                            ratio(r.get("floor_multi_ns"), r.get("floor_ns")))[0],
             "bftrace_vs_floor_multi": vs_multi,
             "bftrace_over_floor_multi_ns": paired(r, "bpf", "floor_multi",
                                                   minus(r.get("bpf_ns"), r.get("floor_multi_ns")),
                                                   op=lambda x, y: x - y)[0],
             "multi_saves_ns": paired(r, "floor", "floor_multi",
                                      minus(r.get("floor_ns"), r.get("floor_multi_ns")),
                                      op=lambda x, y: x - y)[0]}
        out[b] = d
    return out if "plain" in out else None


# ---------------------------------------------------------------- claims
#
# What the benchmark is held to.  One claim per row of results.md's
# "## Targets" table and per entry of results.json's "targets", in this
# order; the renderer is claims_of() (results.json) and md_targets()
# (results.md).  A claim says:
#   target  its text: the row's first cell, the entry's "target";
#   inputs  the raw results it reads: the @res ids of scripts/bench's
#           outputs (guest-KVER.txt, native.txt), through guest_report()
#           and native_report();
#   guest   how one guest kernel's report is judged: {"value", "text",
#           "holds"} for that kernel's column and per_kernel[KVER]; None
#           for a claim measured natively only;
#   native  the same for the native report: the "native (this machine)"
#           column and "native"; it returns None where this machine did
#           not measure it.  A claim with neither is left out.


def bpf_native_builds(n):
    """bench/bpf-native.sh's rows by build ("plain", "cet")."""
    return {r["build"]: r for r in n.get("bpf_native", [])}


# "below bpftrace" in the guests: in most repetitions, each of which runs
# both side by side; their medians alone swap from run to run
def floor_guest(g):
    b, bp = g["per_call"]["bftrace"], g["per_call"]["bpftrace"]
    r = b["ratio_to_floor"]
    pairs = [(x, y) for x, y in zip(b["ratio_reps"], bp["ratio_reps"])
             if x is not None and y is not None]
    below = sum(x < y for x, y in pairs)
    if pairs:
        is_below = 2 * below > len(pairs)
        how = f"; below bpftrace in {below} of {len(pairs)} repetitions"
    else:
        is_below = (bp["ns_per_call"] is not None and b["ns_per_call"] is not None
                    and b["ns_per_call"] < bp["ns_per_call"])
        how = ""
    return {"value": r, "text": f"{fmt_ratio(r)} floor{ratio_range(b)}, bpftrace "
            f"{fmt_ratio(bp['ratio_to_floor'])}{ratio_range(bp)}{how}",
            "holds": r is not None and r <= 1.10 and is_below}


def floor_native(n):
    nat = native_floor(n)
    if not nat:
        return None
    p = nat["plain"]
    same = ""
    if p.get("bftrace_vs_floor_multi") is not None:
        same = (f"; against empty programs on its own kind of link (uprobe_multi), "
                f"{fmt_ratio(p['bftrace_vs_floor_multi'])}"
                f"{ratio_range({'ratio_reps': p['vs_floor_multi_reps']})}")
    if p["pairs"]:
        how = f"; below bpftrace in {p['below_bpftrace']} of {p['pairs']} repetitions"
        is_below = 2 * p["below_bpftrace"] > p["pairs"]
    else:
        how = ""
        is_below = (p["bpftrace_empty_ns"] is not None
                    and p["bftrace_ns"] < p["bpftrace_empty_ns"])
    return {"value": p["bftrace_vs_floor"],
            "text": f"{fmt_ratio(p['bftrace_vs_floor'])} floor"
                    f"{ratio_range({'ratio_reps': p['vs_floor_reps']})}, bpftrace "
                    f"{fmt_ratio(p['bpftrace_empty_vs_floor'])}"
                    f"{ratio_range({'ratio_reps': p['bpftrace_empty_vs_floor_reps']})}"
                    f"{how} (BPF backend, plain build{same})",
            "holds": (p["bftrace_vs_floor"] is not None and p["bftrace_vs_floor"] <= 1.10
                      and is_below)}


def inline_native(n):
    """bench/inline-native.sh per build: the inline backend's cost per
    traced call (traced minus untraced), its parts, and its ratios to
    uftrace's and bpftrace's costs, each the median of the ratios within a
    repetition, where all ran side by side."""
    out = {}
    cost = lambda a, b: a - b
    for r in (n or {}).get("inline_native", []):
        b = r.get("build")
        d = {k: r.get(k) for k in ("calls", "untraced_ns", "inline_ns", "inline_cost_ns",
                                   "inline_entry_cost_ns", "inline_init_cost_ns", "clock_ns",
                                   "record_floor_ns", "floor_cost_ns", "bpftrace_empty_cost_ns",
                                   "bpf_cost_ns", "uftrace_cost_ns", "pg_untraced_ns",
                                   "bytes_per_call", "inline_seen", "inline_expect",
                                   "inline_lost", "bpftrace_calls")}
        costs = {}
        for k in ("inline", "inline_entry", "inline_init", "floor", "bpftrace_empty", "bpf",
                  "uftrace"):
            w = within(r, k, "untraced", cost)
            costs[k] = w
        def rel(a, b):
            pairs = [x / y for x, y in zip(costs.get(a) or [], costs.get(b) or [])
                     if x is not None and y]
            return (statistics.median(pairs) if pairs else ratio(d.get(a + "_cost_ns"),
                                                                 d.get(b + "_cost_ns"))), pairs
        d["vs_uftrace"], d["vs_uftrace_reps"] = rel("inline", "uftrace")
        d["vs_bpftrace_empty"], d["vs_bpftrace_empty_reps"] = rel("inline", "bpftrace_empty")
        d["vs_floor"], d["vs_floor_reps"] = rel("inline", "floor")
        d["vs_bpf"], _ = rel("inline", "bpf")
        # the parts: the stub and mode check (INITIALIZING), the return path
        # (entry and return minus entries only), what is above the physical
        # floor (two clock reads and the bytes stored, in a loop of its own)
        # the least disturbed run of each (the machine is shared: a run
        # next to another's load reads the clock 3x slower)
        for k in ("inline", "inline_entry", "uftrace", "bpftrace_empty", "clock", "record_floor"):
            got = [x for x in r.get("reps_" + k) or [] if x is not None]
            d["best_" + k + "_ns"] = min(got) if got else None
        d["return_path_ns"] = minus(d.get("inline_cost_ns"), d.get("inline_entry_cost_ns"))
        d["above_record_floor_ns"] = minus(d.get("inline_ns"), d.get("record_floor_ns"))
        out[b] = d
    return out


def inline_uftrace_claim(n):
    d = inline_native(n).get("plain")
    if not d or d.get("vs_uftrace") is None:
        return None
    c = inline_native(n).get("cet", {})
    return {"value": d["vs_uftrace"],
            "text": f"{fmt(d['inline_cost_ns'], 1)} ns against uftrace's {fmt(d['uftrace_cost_ns'], 1)} "
                    f"(plain build, {fmt_ratio(d['vs_uftrace'])}"
                    f"{ratio_range({'ratio_reps': d['vs_uftrace_reps']})}); CET build "
                    f"{fmt_ratio(c.get('vs_uftrace'))}",
            "holds": d["vs_uftrace"] <= 1.0 and (c.get("vs_uftrace") or 0) <= 1.0}


def inline_bpftrace_claim(n):
    d = inline_native(n).get("plain")
    if not d or d.get("vs_bpftrace_empty") is None:
        return None
    return {"value": d["vs_bpftrace_empty"],
            "text": f"{fmt(d['inline_cost_ns'], 1)} ns against bpftrace's "
                    f"{fmt(d['bpftrace_empty_cost_ns'], 1)} (plain build, 1/"
                    f"{fmt(1 / d['vs_bpftrace_empty'] if d['vs_bpftrace_empty'] else None, 1)})",
            "holds": d["vs_bpftrace_empty"] <= 0.05}


# the real library: what bfctl's placement is for
def sqlite_claim(g):
    q = g.get("sqlite")
    r = q.get("bftrace_vs_bpftrace_empty") if q else None
    return {"value": r, "text": f"bftrace {fmt(q['bftrace_cost_ns'] if q else None)} ns/call, bpftrace "
            f"empty {fmt(q['bpftrace_empty_cost_ns'] if q else None)}: {fmt_ratio(r)}",
            "holds": r is not None and r < 1 and bool(q and q["counts_right"])}


def cet_guest(g):
    r = g["cet"]["bpftrace"]["ratio_to_bftrace_func4"]
    best = ratio(g["cet"]["bpftrace"]["ns_per_call"], g["cet"]["floor_func4"]["ns_per_call"])
    return {"value": r, "best_possible": best,
            "text": f"bpftrace / bftrace(func+4) = {fmt_ratio(r)} (a bare trap at func+4 would reach {fmt_ratio(best)})",
            "holds": r is not None and r >= 5}


def cet_native(n):
    c = (native_floor(n) or {}).get("cet")
    if not c:
        return None
    r = ratio(c["bpftrace_empty_ns"], c["bftrace_ns"])
    return {"value": r, "text": f"bpftrace / bftrace(func+4) = {fmt_ratio(r)} (BPF backend; "
            f"a bare trap at func+4 would reach {fmt_ratio(ratio(c['bpftrace_empty_ns'], c['floor_ns']))})",
            "holds": r is not None and r >= 5}


def size_guest(g):
    s = g["size"]
    v = s["bytes_per_call"] if s else None
    return {"value": v, "text": f"{fmt(v, 2)} bytes/call", "holds": v is not None and v <= 3}


def size_native(n):
    v = bpf_native_builds(n).get("plain", {}).get("bytes_per_call")
    if v is None:
        return None
    return {"value": v, "text": f"{fmt(v, 2)} bytes/call (BPF backend, one thread flat out)",
            "holds": v <= 3}


def throughput_native(n):
    v = (n.get("collector_bytefrog") or {}).get("events_per_cpu_s")
    return {"value": v, "text": f"{fmt(v / 1e6 if v else None, 1)} M events/s",
            "holds": v is not None and v >= 20e6}


def collector_cpu_guest(g):
    c = g["collector_cpu"]
    v = c["cpu_pct"] if c else None
    return {"value": v, "text": f"{fmt(v, 1)} % of a core at {fmt(c['events_per_s'] if c else None)} events/s",
            "holds": v is not None and v < 5}


def collector_cpu_native(n):
    p = bpf_native_builds(n).get("plain", {})
    v = p.get("collector_cpu_pct")
    if v is None:
        return None
    ev = 2e9 / p["bpf_ns"] if p.get("bpf_ns") else None
    st = p.get("collector_start_cpu_s")
    start = (f"; its start-up, making the BPF session once, {fmt(st, 2)} s of CPU, not counted"
             if st is not None else "")
    return {"value": v, "text": f"{fmt(v, 1)} % of a core at {fmt(ev)} events/s "
            f"(BPF backend, one thread flat out{start})", "holds": v < 5}


# held to the collector's whole CPU time while sampling, the stricter
# reading; what sampling adds to the idle collector is in the text
def counters_claim(g):
    c = g.get("counters")
    v = c["cpu_pct_10hz"] if c else None
    fl = ((c or {}).get("floor") or {})
    what = "a bare 10 Hz wake, status ioctl and send"
    if fl.get("all") is None:
        what = "a bare 10 Hz wake and send"
    fl = fl.get("all") if fl.get("all") is not None else fl.get("send")
    return {"value": v, "text": f"{fmt(v, 2)} % of a core ({fmt(c['cpu_pct_none'] if c else None, 2)} % "
            f"without sampling, so sampling {fmt(c['sampling_pct'] if c else None, 2)} %), "
            f"sampled calls {'right' if c and c['correct'] else 'WRONG'}; "
            f"floor ({what}) {fmt(fl, 2)} %",
            "holds": v is not None and v < 1 and bool(c and c["correct"])}


# the median: a benchmark of a pipeline with a 100 ms flush, not a bound
def live_view_claim(g):
    lv = g.get("live_view")
    v = lv["median_ms"] if lv else None
    return {"value": v, "text": f"median {fmt(v)} ms, at most {fmt(lv['max_ms'] if lv else None)} "
            f"({lv['runs'] if lv else 0} runs)", "holds": v is not None and v <= 200}


def if_measured(key, claim):
    """The native side of a claim judged like a guest's, where natively measured."""
    return lambda n: claim(n) if n.get(key) else None


Claim = collections.namedtuple("Claim", "target inputs guest native")

CLAIMS = (
    Claim("bftrace <= 1.10x the floor per traced call, and below bpftrace",
          "guest: plain.bftrace, plain.bpftrace, plain.floor (ns per repetition); "
          "native: bpf_native plain (bpf/floor/bpftrace_empty/floor_multi ns, reps_*)",
          floor_guest, floor_native),
    Claim("a real library (libsqlite3's API): bftrace below bpftrace's empty probes",
          "sqlite.KVER, sqlite.native (bench/sqlite-api.sh: traced and untraced "
          "rounds, hits, the tools' counts)",
          sqlite_claim, if_measured("sqlite", sqlite_claim)),
    Claim("with endbr64 placement, >= 5x cheaper than bpftrace (CET build)",
          "guest: cet.bpftrace, cet.bftrace_func4, cet.floor_func4; "
          "native: bpf_native cet (bpftrace_empty, bpf, floor ns)",
          cet_guest, cet_native),
    Claim("<= 3 bytes per traced call in the rings",
          "guest: size (bytes, calls); native: bpf_native plain bytes_per_call",
          size_guest, size_native),
    Claim("collector >= 20 M events/s on one core (decode, merge, encode Bytefrog)",
          "native: collector_bytefrog (events, user + sys CPU s)",
          None, throughput_native),
    Claim("collector < 5% of a core at the kernel's maximum rate",
          "guest: loss.0 (flat out: calls_per_s, coll_ticks, elapsed_ns); "
          "native: bpf_native plain collector_cpu_pct, bpf_ns",
          collector_cpu_guest, collector_cpu_native),
    Claim("counters at 10 Hz with 1000 probes: collector < 1% of a core",
          "counters.10hz, counters.none, counters.floor.* (bench/guest-counters.sh)",
          counters_claim, None),
    Claim("the same, the BPF backend natively",
          "native: counters.10hz, counters.none, counters.floor.*",
          None, if_measured("counters", counters_claim)),
    Claim("inline backend: no more than uftrace's cost per traced call (-pg build)",
          "native: inline_native plain and cet (inline, uftrace, untraced ns, reps_*)",
          None, inline_uftrace_claim),
    Claim("inline backend: at most 1/20 of bpftrace's empty probes per traced call",
          "native: inline_native plain (inline, bpftrace_empty, untraced ns, reps_*)",
          None, inline_bpftrace_claim),
    Claim("live viewer: a call on the page within 2x the flush interval (200 ms)",
          "live_view (delay_ms per run, scripts/live-view-test.py)",
          live_view_claim, if_measured("live_view", live_view_claim)),
)


def claims_of(guests, native):
    """results.json's "targets": CLAIMS judged on every report."""
    out = []
    for c in CLAIMS:
        t = {"target": c.target}
        if c.guest:
            t["per_kernel"] = {k: c.guest(g) for k, g in guests.items()}
        v = c.native(native or {}) if c.native else None
        if v is not None:
            t["native"] = v
        if len(t) > 1:
            out.append(t)
    return out


def profile_delta(floor, bft):
    """Per symbol: (symbol, floor ns/call, bftrace ns/call), largest gain first."""
    def per_sym(d):
        out = {}
        for x in d["samples"]:
            if x["pct"] is not None and d["ns_per_call"]:
                out[x["symbol"]] = out.get(x["symbol"], 0) + x["pct"] / 100 * d["ns_per_call"]
        return out
    f, b = per_sym(floor), per_sym(bft)
    rows = [(k, f.get(k, 0.0), b.get(k, 0.0)) for k in set(f) | set(b)]
    rows.sort(key=lambda x: (-(x[2] - x[1]), x[0]))  # a set: ties by name
    return rows


def md_table(rows, header):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines)


def code(s):
    return "`" + s.replace("`", "'") + "`" if s else ""


def native_floor_md(doc):
    """The native floor (bench/bpf-native.sh), beside the guests' ratios."""
    L = []
    n = doc.get("native") or {}
    nf = native_floor(n)
    if not nf:
        return []
    cmds = n.get("bpf_native_commands", {})
    L += [
        "## Per-call cost against the bare trap, natively and in the guests\n",
        f"Natively: this machine's kernel ({n.get('host', {}).get('host_kernel', '?')}), traps "
        "on the hardware, the BPF backend (`bench/bpf-native.sh`). The floor is the same "
        "uprobe + uretprobe with BPF programs that do nothing (`bench/tools/bench_bpffloor.c`, "
        "`bench/tools/bench_floor.bpf.c`): the trap, the uprobe core and the BPF dispatch. "
        "Medians of the repetitions, the tracers interleaved within each; a ratio is the median "
        "of the ratios within each repetition, their range in brackets.\n",
    ]
    for b, label in (("plain", "plain build (push %rbp at func)"),
                     ("cet", "CET build (endbr64 at func, push %rbp at func+4)")):
        d = nf.get(b)
        if not d:
            continue
        cid = f"bpf_native.{b}."
        rows = [["untraced", fmt(d["untraced_ns"], 1), "", "", code(cmds.get(cid + "untraced", ""))],
                [f"floor at {d['floor_at']}", fmt(d["floor_ns"], 1), "1.00x",
                 f"{d['floor_seen'] or 'n/a'} of {fmt(d['floor_expect'])} (entries/returns)",
                 code(cmds.get(cid + "floor", ""))]]
        if d.get("floor_multi_ns") is not None:
            rows.append([f"floor at {d['floor_at']}, uprobe_multi links (bftrace's kind)",
                         fmt(d["floor_multi_ns"], 1), fmt_ratio(d["floor_multi_vs_floor"]),
                         f"{d['floor_multi_seen'] or 'n/a'} (entries/returns, a run of 1,000 calls)",
                         code(cmds.get(cid + "floor_multi", ""))])
        if d.get("floor_func_ns") is not None:
            rows.append(["floor at func (single-steps endbr64)", fmt(d["floor_func_ns"], 1),
                         fmt_ratio(ratio(d["floor_func_ns"], d["floor_ns"])), "",
                         code(cmds.get(cid + "floor_func", ""))])
        rows.append([f"bftrace, BPF backend, at {d['floor_at']}", fmt(d["bftrace_ns"], 1),
                     fmt_ratio(d["bftrace_vs_floor"]) + ratio_range({"ratio_reps": d["vs_floor_reps"]}),
                     d["seen"], code(cmds.get(cid + "bpf", ""))])
        fl = "" if b == "plain" else " (vs the floor at func)"
        rows.append([f"bpftrace, empty actions, at func", fmt(d["bpftrace_empty_ns"], 1),
                     fmt_ratio(d["bpftrace_empty_vs_floor"])
                     + ratio_range({"ratio_reps": d["bpftrace_empty_vs_floor_reps"]}) + fl, "",
                     code(cmds.get(cid + "bpftrace_empty", ""))])
        rows.append([f"bpftrace, counting, at func", fmt(d["bpftrace_ns"], 1),
                     fmt_ratio(d["bpftrace_vs_floor"]) + fl, "",
                     code(cmds.get(cid + "bpftrace", ""))])
        L += [
            f"### Native, {label}, {fmt(d['calls'])} calls"
            + (f" ({fmt(d['bpftrace_calls'])} for the rows at func)" if b == "cet" else "") + "\n",
            md_table(rows, ["", "ns/call", "vs floor", "events seen", "command"]),
        ]
        below = (f", below it in {d['below_bpftrace']} of {d['pairs']} repetitions"
                 if d["pairs"] else "")
        L.append(f"\nbftrace / bpftrace (empty): {fmt_ratio(d['bftrace_vs_bpftrace_empty'])}{below}; "
                 f"bftrace's own cost over the floor's: {fmt_ratio(d['bftrace_cost_vs_floor_cost'])} "
                 "(each minus the untraced loop)."
                 + (f" The floor and bpftrace 0.17 attach perf-event links; bftrace, on this kernel, "
                    f"uprobe_multi links, which save {fmt(d['multi_saves_ns'])} ns a call on empty "
                    f"programs. On the same kind of link, bftrace's programs cost "
                    f"{fmt(d['bftrace_over_floor_multi_ns'])} ns a call more than empty ones "
                    f"({fmt_ratio(d['bftrace_vs_floor_multi'])}): what it does per call, the clock "
                    "read and the record, against programs that do nothing."
                    if d.get("floor_multi_ns") is not None else "") + "\n")
    rows = []
    for k, g in doc["kernels"].items():
        pc = g["per_call"]
        rows.append([f"guest {k} (TCG, bftrace.ko)", fmt_ratio(pc["bftrace"]["ratio_to_floor"]),
                     fmt_ratio(pc["bpftrace"]["ratio_to_floor"]),
                     fmt_ratio(g["cet"]["bftrace_func4"]["ratio_to_floor"]),
                     fmt_ratio(g["cet"]["bpftrace"]["ratio_to_floor"])])
    p, c = nf.get("plain", {}), nf.get("cet", {})
    rows.append(["native (BPF backend)", fmt_ratio(p.get("bftrace_vs_floor")),
                 fmt_ratio(p.get("bpftrace_empty_vs_floor")), fmt_ratio(c.get("bftrace_vs_floor")),
                 fmt_ratio(c.get("bpftrace_empty_vs_floor"))])
    L += [
        "Side by side, per traced call as a ratio to the floor at the same site "
        "(the guests' floor is `bft_floor.ko`, natively the empty BPF programs; "
        "bpftrace with empty actions; CET: bftrace at func+4, bpftrace at func):\n",
        md_table(rows, ["where", "bftrace / floor (plain)", "bpftrace / floor (plain)",
                        "bftrace / floor (CET)", "bpftrace / floor (CET)"]),
        "",
    ]
    return L


def sqlite_md(doc):
    """The real library (bench/sqlite-api.sh), natively and in the guests."""
    L = []
    where = []
    n = doc.get("native") or {}
    if n.get("sqlite"):
        where.append(("native, BPF backend", n["sqlite"]))
    for k, g in doc["kernels"].items():
        if g.get("sqlite"):
            where.append((f"guest {k}, bftrace.ko", g["sqlite"]))
    if not where:
        return []
    L += [
        "## A real library: libsqlite3's API under a fixed SQL workload\n",
        "`bench/targets/bench_sqlite.c` fills an in-memory table through a prepared INSERT "
        "and reads it back, several rounds per process, each on a new database; both tools "
        "probe entry and return of the same `sqlite3_*` functions, the ones the workload "
        "calls. bftrace runs twice: with its probes where bfctl places them (off single-step "
        "where it can) and with `--at-entry`, on each function's first byte, where bpftrace's "
        "are. Cost per traced API call = (the traced run's median round - the same "
        "repetition's untraced median round) / the calls the probes counted in a round (the "
        "library calls some of them itself); the median of the repetitions, their range in "
        "brackets. In the guests bpftrace's counting run, which gives the calls, runs in the "
        "first repetition only (each bpftrace start takes seconds there), so its column is "
        "one run.\n",
    ]

    def c(q, k):
        v, rng = q.get(k + "_cost_ns"), q.get(k + "_cost_range")
        if v is None:
            return "n/a"
        if not rng or q["reps"] < 2 or rng[0] == rng[1]:
            return fmt(v)
        return f"{fmt(v)} ({fmt(rng[0])} to {fmt(rng[1])})"
    rows = []
    for w, q in where:
        per_round = q["rounds"] or 1
        rows.append([w, f"{fmt(q['rows'])} x {fmt(per_round)}", fmt(q["probes"]),
                     fmt(q["api_calls"] / per_round if q["api_calls"] else None),
                     fmt(q["hits"] / per_round if q["hits"] else None),
                     fmt(q["untraced_ns"] / 1e6 if q["untraced_ns"] else None, 2),
                     c(q, "bftrace"), c(q, "bftrace_at_entry"), c(q, "bpftrace_empty"),
                     c(q, "bpftrace"), fmt_ratio(q["bftrace_vs_bpftrace_empty"]),
                     fmt_ratio(q["bftrace_vs_at_entry"]),
                     "right" if q["counts_right"] else "**WRONG**: " + "; ".join(q["count_errors"][:3])])
    L += [
        md_table(rows, ["where", "rows x rounds", "probed functions", "calls the workload makes "
                        "a round", "calls traced a round", "untraced ms a round",
                        "bftrace ns/call (placed)", "bftrace --at-entry ns/call",
                        "bpftrace empty ns/call", "bpftrace counting ns/call",
                        "bftrace / bpftrace empty", "bftrace placed / at entry",
                        "counts (bftrace = 2 x calls = bpftrace's)"]),
        "\nCommands:\n",
    ]
    for w, q in where:
        for k, c in q["commands"].items():
            if c:
                L.append(f"- {w}, {k}: {code(c)}")
    L.append("")
    ss = (n.get("sqlite") or {}).get("single_step")
    if ss:
        L.append("Which of these probes uprobes single-step (`bench/singlestep-share.py`, the "
                 "library's code, weighed by the calls the native run counted): at each "
                 f"function's first byte (bpftrace, bftrace --at-entry) {ss['probes_single_stepped']} "
                 f"of {ss['probes']} probed functions and {fmt(ss['calls_single_stepped'])} of "
                 f"{fmt(ss['calls'])} calls "
                 f"({fmt(100 * ratio(ss['calls_single_stepped'], ss['calls']) if ss['calls'] else None, 1)} %); "
                 f"where bfctl places them (the generalised endbr64 rule) {ss['probes_after_rule']} "
                 f"function{'' if ss['probes_after_rule'] == 1 else 's'} and "
                 f"{fmt(ss['calls_after_rule'])} calls.")
        lib = ss.get("library")
        if lib:
            L.append(f"Over all {fmt(lib['functions'])} exported `sqlite3_*` functions: "
                     f"{fmt(lib['emulated_at_entry'])} start with an emulated instruction, "
                     f"{fmt(lib['moved_by_rule'])} more do where bfctl places the probe, "
                     f"{fmt(lib['still_single_stepped'])} stay single-stepped.")
        L += [
            "",
            md_table([[code(f["name"]), f["class"], fmt(f["hits"])] for f in
                      sorted(ss["functions"], key=lambda f: -(f["hits"] or 0))],
                     ["function", "first instruction", "calls traced a round (native)"]),
            "",
        ]
    return L


HQ_OUTPUTS = (("trace.pftrace", "Perfetto protobuf timeline"), ("trace.json", "Chrome JSON timeline"),
              ("trace.speedscope.json", "speedscope evented profiles"),
              ("tree.txt", "call tree text"), ("calls.txt", "canonical calls"),
              ("folded.txt", "folded stacks"), ("flame.svg", "flame graph"),
              ("live", "live copy (the trace as received, in text)"))


def hq_large_md(n, doc):
    """hq_large (bench/hq-large.sh): bfhq's memory, write time and bytes per call."""
    L = []
    h = n.get("hq_large")
    if not h or not h.get("calls"):
        return []
    calls = h["calls"]
    L += [
        "\n### bfhq on a large trace (bench/hq-large.sh)\n",
        f"{fmt(calls)} calls from bfcollector's replay of a synthetic recording "
        f"({code(h['command'])}): bfhq's peak RSS {fmt(h.get('maxrss_kib', 0) / 1024)} MiB, "
        f"{fmt(h.get('cpu_s'), 1)} CPU s in all, {fmt(h.get('write_s'), 1)} s from the agent's end "
        f"to bfhq's exit (writing the outputs). On the wire: "
        f"{fmt(h.get('wire_bytes', 0) / calls, 1)} bytes per call.\n",
    ]
    rows = [[code(f), what, fmt(h.get(f)), fmt(h.get(f, 0) / calls, 1),
             fmt_ratio(ratio(h.get(f), h.get("wire_bytes")))]
            for f, what in HQ_OUTPUTS if h.get(f) is not None]
    L += [
        md_table(rows, ["output", "what", "bytes", "bytes/call", "vs the wire"]),
        "",
    ]
    return L


def live_view_md(n, doc):
    """live_view*: the live viewer's delays and stages, per place."""
    L = []
    places = [(f"{k} guest, module", g.get("live_view")) for k, g in doc["kernels"].items()]
    places.append(("native, BPF backend", (doc.get("native") or {}).get("live_view")))
    places.append(("native, BPF backend, data over UDP",
                   (doc.get("native") or {}).get("live_view_udp")))
    places = [(w, lv) for w, lv in places if lv]
    if not places:
        return []
    L += [
        "\n### The live viewer (bfhq --http)\n",
        "From the moment the test tells the calltree target to run to the first render that "
        "shows the run's first call in headless Chromium (goal: at most twice the flush "
        "interval, 200 ms at the defaults). bfhq and Chromium run on this machine; in the "
        "guests' rows the target, the module and bfcollector run in the guest, which streams "
        "to bfhq through a forwarded port, and a run starts when the command to run leaves "
        "this machine.\n",
        md_table([[w, str(lv["runs"]), fmt(lv["median_ms"]), fmt(lv["max_ms"]),
                   fmt(lv.get("sse_median_ms")), code(lv["command"])] for w, lv in places],
                 ["where", "runs", "median ms", "max ms", "median to the SSE handler, ms",
                  "command"]),
    ]
    names = []
    for _, lv in places:
        names += [st["stage"] for st in lv["stages"] if st["stage"] not in names]
    if names:
        L.append("\nWhere that time goes, median ms per stage (`bfhq --live-stamps`, the page's "
                 "`?stamps`; docs/live-format.md):\n")
        rows = []
        for name in names:
            cells = []
            for _, lv in places:
                st = [x for x in lv["stages"] if x["stage"] == name]
                cells.append(fmt(st[0]["median_ms"], 1) if st else "")
            rows.append([code(name)] + cells)
        L.append(md_table(rows, ["stage"] + [w for w, _ in places]))
    L.append("")
    return L


def md_preamble(doc):
    """The title, the host and each guest, and what TCG does to the figures."""
    L = [
        "# bftrace benchmark results\n",
        f"Generated by `scripts/bench` (`make bench`) on {doc['date']}. "
        "Raw outputs: `build/bench/`. A benchmark, not a test: nothing here is asserted.\n",
    ]
    n = doc.get("native") or {}
    h = n.get("host", {})
    L.append(f"- Host: {h.get('host_cpu', '?')}, {h.get('host_cpus', '?')} CPUs, kernel {h.get('host_kernel', '?')}.")
    for k, g in doc["kernels"].items():
        gi = g["guest"]
        L.append(f"- Guest {k}: QEMU TCG (`scripts/guest-run`), {gi.get('cpus', '?')} vCPUs "
                 f"({gi.get('cpu', '?')}); {gi.get('bpftrace', '')}; {gi.get('perf', '')}; "
                 f"{gi.get('calls', '?')} timed calls per thread per measurement after "
                 f"{gi.get('warmup', '?')} untimed, median of {gi.get('reps', '?')} repetitions, "
                 "the tracers interleaved within each repetition; a ratio to the floor is the "
                 "median of the ratios within each repetition, their range in brackets.")
    L.append("\nUnder TCG every guest instruction is translated: a trap costs several "
             "times what it costs on hardware, plain code tens of times, so only ratios "
             "measured in one guest compare, and they overstate a handler's share. The floor is `bench/floor` (`bft_floor.ko`), one uprobe + uretprobe "
             "consumer whose handlers only count: the cost of the trap itself.\n")
    return L


def md_targets(doc):
    """The claims (CLAIMS, results.json's "targets"), one row each."""
    L = ["## Targets\n"]
    rows = []
    ks = list(doc["kernels"])
    for t in doc["targets"]:
        cells = [t["per_kernel"][k]["text"] if "per_kernel" in t else "" for k in ks]
        verdicts = []
        if "per_kernel" in t:
            verdicts.append("not measured" if not ks else
                            "yes" if all(t["per_kernel"][k]["holds"] for k in ks) else "**no**")
        v = t.get("native")
        if v:
            verdicts.append(("natively: " if "per_kernel" in t else "") +
                            ("yes" if v["holds"] else "**no**"))
        rows.append([t["target"]] + cells + [v["text"] if v else ""] + ["; ".join(verdicts)])
    L += [
        md_table(rows, ["target"] + ks + ["native (this machine)", "holds"]),
        "",
    ]
    return L


def md_per_call(k, g, doc):
    """plain.*: ns per call against the floor (per_call)."""
    L = [f"## Per-call cost, plain build ({k})\n"]
    rows = []
    names = {"untraced": "untraced", "floor": "floor (bare trap)",
             "bftrace": "bftrace, collector draining",
             "bftrace_noreader": "bftrace, nothing reading the rings",
             "bpftrace": "bpftrace, empty action",
             "perf": "perf probe + perf record"}
    for t, d in g["per_call"].items():
        own = "" if d.get("paired") or t in ("untraced", "floor") else " (own loop: ratio of medians)"
        rows.append([names[t], fmt(d["ns_per_call"]), fmt_ratio(d["ratio_to_floor"]) + ratio_range(d) + own,
                     d["seen"], code(d["command"])])
    L.append(md_table(rows, ["", "ns/call", "vs floor", "events seen", "command (in the guest)"]))
    b = g["per_call"]["bftrace"]
    L.append(f"\nbftrace's collector used {fmt(b.get('collector_cpu_pct'), 1)} % of a core "
             "during these runs (utime+stime from /proc/PID/stat over the run).\n")
    return L


def md_cet(k, g, doc):
    """cet.*: the -fcf-protection=full build (cet), host.bpftrace_* beside it."""
    n = doc.get("native") or {}
    L = [f"## endbr64: the -fcf-protection=full build ({k})\n"]
    rows = []
    names = {"untraced": "untraced", "floor_func": "floor at func (endbr64)",
             "floor_func4": "floor at func+4 (push %rbp)",
             "bftrace_func": "bftrace at func (--no-endbr)",
             "bftrace_func4": "bftrace at func+4 (default)",
             "bpftrace": "bpftrace (at func), empty action"}
    for t, d in g["cet"].items():
        rows.append([names[t], fmt(d["ns_per_call"]), fmt_ratio(d["ratio_to_floor"]) + ratio_range(d),
                     d["floor"].split(".")[1].replace("floor_", ""),
                     fmt_ratio(d["ratio_to_bftrace_func4"]), d["seen"], code(d["command"])])
    L.append(md_table(rows, ["", "ns/call", "vs floor", "floor at", "vs bftrace func+4 (medians)",
                             "events seen", "command"]))
    c = g["cet"]
    L.append(f"\nSingle-stepping endbr64 costs {fmt_ratio(ratio(c['floor_func']['ns_per_call'], c['floor_func4']['ns_per_call']))} "
             "the emulated push %rbp in this guest (floor at func vs func+4).")
    hb = n.get("host_bpftrace") if n else None
    if hb:
        L.append(f"On this machine's own kernel ({n['host'].get('host_kernel', '?')}, traps on the hardware, not under TCG) "
                 f"bpftrace costs {fmt(hb['plain_ns'])} ns/call at push %rbp and {fmt(hb['cet_ns'])} ns/call at endbr64: "
                 f"{fmt_ratio(hb['cet_vs_plain'])} (median of 3; {code(hb['command_cet'])}).")
    L.append("")
    return L


def md_size(k, g, doc):
    """size, size.res*: ring bytes per call by record kind (size, size_by_res)."""
    L = []
    s = g["size"]
    L.append(f"## Bytes per traced call in the rings ({k})\n")
    if s:
        L.append(f"{fmt(s['bytes_per_call'], 2)} bytes per call (entry + exit, timestamps and "
                 f"every other record included): {fmt(s['bytes'])} bytes for {fmt(s['calls'])} calls "
                 f"at {fmt(s['ns_per_call'])} ns/call; "
                 f"{fmt_ratio(s['ratio_to_bytefrog_v1'])} of Bytefrog v1's 32 (15 + 17), "
                 f"{fmt_ratio(s['ratio_to_uftrace'])} of uftrace's 32. Events seen {s['seen']} of {s['expect']}. "
                 f"Command: {code(s['command'])}\n")
        rows = [[x["kind"], fmt(x["records"]), fmt(x["bytes"]), fmt(x["bytes_per_call"], 2)]
                for x in s["kinds"]]
        L += [
            md_table(rows, ["record kind", "records", "bytes", "bytes/call"]),
            "",
        ]
        if len(g.get("size_by_res", [])) > 1:
            L.append("The same at coarser time units (`bfctl set time_res_ns`), to show what the timestamps cost:\n")
            rows = [[fmt(x["time_res_ns"]), fmt(x["bytes_per_call"], 2),
                     fmt_ratio(ratio(x["bytes_per_call"], s["bytes_per_call"])),
                     fmt(sum(k["bytes_per_call"] for k in x["kinds"] if k["kind"].startswith("TIME")), 2),
                     code(x["command"])] for x in g["size_by_res"]]
            L += [
                md_table(rows, ["time unit ns", "bytes/call", "vs default", "of which TIME records", "command"]),
                "",
            ]
    return L


def md_throws(k, g, doc):
    """throw.*: a C++ throw through traced frames (throws)."""
    L = []
    if g.get("throws"):
        L.append(f"## A C++ throw through traced frames ({k})\n")
        rows = [[str(x["depth"]), fmt(x["untraced_ns"]), fmt(x["bftrace_ns"]),
                 fmt_ratio(x["ratio_to_untraced"]), x["caught"], str(x["lost"]),
                 code(x["command"])] for x in g["throws"]]
        L += [
            md_table(rows, ["frames", "untraced ns/throw", "traced ns/throw",
                            "vs untraced", "throws caught (traced)", "lost",
                            "command (in the guest)"]),
            "\nTraced: entry and return probes on every frame, plus the exception "
            "hooks bfctl adds (unwinder entry, `__cxa_throw`, `__cxa_begin_catch`). "
            "Untraced: the same binary run alone.\n",
        ]
    return L


def md_scaling(k, g, doc):
    """scale.*.2: one and two traced threads (scaling)."""
    L = [f"## Scaling: 1 and 2 traced threads on 2 CPUs ({k})\n"]
    rows = []
    for t, d in g["scaling"].items():
        one, two = d["1"], d["2"]
        rows.append([t, fmt(one["ns_per_call"]), fmt(two["ns_per_call"]),
                     fmt_ratio(two["ratio_to_1_thread"]), fmt_ratio(two["ratio_to_floor"]),
                     two["seen"], code(two["command"])])
    L += [
        md_table(rows, ["", "1 thread ns/call", "2 threads ns/call (per thread)",
                        "2 vs 1", "2 threads vs floor", "events seen (2)", "command (2)"]),
        "",
    ]
    return L


def md_loss(k, g, doc):
    """loss.*: paced rates and loss (loss, loss_summary)."""
    L = [f"## Loss at the default buffer size and flush interval ({k})\n"]
    ls = g["loss_summary"]
    L.append(f"Highest sustained rate with zero loss: {fmt(ls['max_zero_loss_events_per_s'])} events/s "
             f"(the highest reached: {fmt(ls['max_events_per_s'])} events/s, two threads flat out"
             + ("; nothing was lost at any step, so the kernel's trap, not the rings, is the limit here"
                if not ls["any_loss"] else "") + ").\n")
    rows = []
    for x in g["loss"]:
        p = x["paced_calls_per_s_per_thread"]
        rows.append([fmt(p) if p else "flat out", fmt(x["events_per_s"]),
                     fmt_ratio(ratio(x["events_per_s"], ls["max_events_per_s"])),
                     x["lost"], f"{x['seen']} of {x['expect']}",
                     fmt(x["collector_cpu_pct"], 1), code(x["command"])])
    L += [
        md_table(rows, ["paced calls/s per thread", "events/s", "vs max", "lost",
                        "events seen", "collector % CPU", "command"]),
        "",
    ]
    return L


def md_bpf_guest(k, g, doc):
    """plain.bpf, cet.bpf_func4, bpf.flat: the BPF backend in the guest (bpf)."""
    L = []
    bpf = g.get("bpf")
    if bpf:
        L.append(f"## The BPF backend in the same guest ({k})\n")
    if bpf and bpf.get("skip"):
        L.append(f"Not measured: {bpf['skip']}\n")
    elif bpf:
        L.append(f"`bfctl --backend bpf` ({bpf.get('links') or '?'}), its collector draining, "
                 "in the same boot as the figures above, in a loop of its own after theirs, so "
                 "its ratios are ratios of medians; the module's and bpftrace's figures "
                 "are those of the tables above.\n")
        rows = []
        for key, label in (("plain", "plain build, probe at func"),
                           ("cet", "CET build, probe at func+4")):
            d = bpf[key]
            rows.append([label, fmt(d["ns_per_call"]), fmt_ratio(d["ratio_to_floor"]),
                         fmt_ratio(d["ratio_to_module"]), fmt_ratio(d["ratio_to_bpftrace"]),
                         fmt(d["bytes_per_call"], 2), d["seen"], code(d["command"])])
        L.append(md_table(rows, ["", "ns/call", "vs floor", "vs bftrace.ko", "vs bpftrace",
                                 "ring bytes/call", "events seen", "command (in the guest)"]))
        f = bpf.get("flat")
        if f:
            L.append(f"\nFlat out (two threads): {fmt(f['events_per_s'])} events/s, "
                     f"{f['lost']} lost, {f['seen']} of {f['expect']} events seen; the collector "
                     f"used {fmt(f['collector_cpu_pct'], 1)} % of a core. {code(f['command'])}")
        L.append("")
    return L


def md_profile(k, g, doc):
    """@prof, prof.*: perf samples of a traced call (profile)."""
    L = []
    pr = g.get("profile") or {}
    if pr:
        L += [
            f"## Profile of a traced call in the guest ({k})\n",
            "`cpu-clock` samples (TCG has no PMU) of the traced thread only "
            "(user and kernel), top symbols, the floor and bftrace side by side; "
            "ns/call is the symbol's share of the time per call measured under perf.\n",
        ]
        for name, d in pr.items():
            L.append(f"- {name}: {fmt(d['ns_per_call'])} ns/call under perf; {code(d['command'])}")
        L.append("")
        names = list(pr)
        depth = max(len(pr[p]["samples"]) for p in names)
        rows = []
        for i in range(min(depth, 20)):
            row = []
            for p in names:
                x = pr[p]["samples"][i] if i < len(pr[p]["samples"]) else None
                share = (x["pct"] / 100 * pr[p]["ns_per_call"]
                         if x and x["pct"] is not None and pr[p]["ns_per_call"] else None)
                row += [f"{x['pct']:.1f}%" if x else "", fmt(share) if x else "",
                        code(x["symbol"]) if x else ""]
            rows.append(row)
        hdr = []
        for p in names:
            hdr += [p, "ns/call", "symbol"]
        L += [
            md_table(rows, hdr),
            "",
        ]
        if "floor" in pr and "bftrace" in pr:
            d = profile_delta(pr["floor"], pr["bftrace"])
            L += [
                "Where bftrace's time per call exceeds the floor's, by symbol "
                "(share of the time per call under perf, bftrace minus floor):\n",
                md_table([[code(x[0]), fmt(x[1]), fmt(x[2]), fmt(x[2] - x[1])] for x in d[:12]],
                         ["symbol", "floor ns/call", "bftrace ns/call", "difference"]),
                "",
            ]
    return L


def md_collector(n, doc):
    """stream, collector_flow, collector_bytefrog: the collector's throughput."""
    L = ["## Collector throughput, native, one core\n"]
    st = n["stream"]
    L.append(f"Input: a synthetic 4-CPU recording of {fmt(st['events'])} events, "
             f"{fmt(st['bytes'])} bytes ({fmt(st['bytes'] / st['events'] if st['events'] else None, 2)} bytes/event), "
             f"made by {code(st['command'])}. CPU time is the collector's user + system time.\n")
    rows = []
    for key, label in (("collector_flow", "bfcollector: decode + merge + call trees + .flow files"),
                       ("collector_bytefrog", "bfcollector: decode + merge + call trees + Bytefrog to HQ")):
        c = n.get(key)
        if c:
            rows.append([label, fmt(c["events_per_cpu_s"] / 1e6 if c["events_per_cpu_s"] else None, 1),
                         fmt_ratio(c["ratio_to_target"]), fmt(c["cpu_s"], 2), fmt(c["wall_s"], 2),
                         code(c["command"])])
    L.append(md_table(rows, ["", "M events/s per CPU second", "vs 20 M/s", "CPU s", "wall s", "command"]))
    bf = n.get("collector_bytefrog")
    if bf and bf.get("wire_bytes") and bf.get("events"):
        L.append(f"\nBytefrog on the wire: {fmt(bf['wire_bytes'] / bf['events'], 1)} bytes per event "
                 f"({fmt(bf['sent'])} events sent).")
    return L


def md_bpf_native(n, doc):
    """bpf_native: the BPF backend natively, per build, or why it was not measured."""
    L = []
    if n.get("bpf_native"):
        L += [
            "\n### The BPF backend, native (bench/bpf-native.sh)\n",
            "One thread calling `bench_work` flat out on CPU 0, bfcollector writing .flow files "
            "on CPU 1; medians. Cost = traced minus untraced ns per call (entry and return).\n",
            md_table([[r.get("build"), fmt(r.get("calls")), fmt(r.get("untraced_ns"), 1),
                       fmt(r.get("bpf_cost_ns"), 1), fmt(r.get("bpftrace_cost_ns"), 1),
                       fmt_ratio(ratio(r.get("bpf_cost_ns"), r.get("bpftrace_cost_ns"))),
                       fmt(r.get("bytes_per_call"), 2), fmt(r.get("collector_cpu_s"), 2),
                       fmt(r.get("collector_cpu_pct"), 1), fmt(r.get("collector_start_cpu_s"), 2)]
                      for r in n["bpf_native"]],
                     ["build", "calls", "untraced ns", "BPF backend ns", "bpftrace ns",
                      "BPF vs bpftrace", "ring bytes/call", "collector CPU s (run and drain)",
                      "collector % of a core (flat out)", "collector start-up CPU s (once)"]),
            "\nThe floor (empty BPF programs) and the ratios to it are in \"Per-call cost "
            "against the bare trap\" above; this kernel loads no module, so the guests' "
            "sections compare the BPF backend with it.",
            "",
        ]
    elif n.get("bpf_native_skip"):
        L.append(f"\nThe BPF backend was not measured: {n['bpf_native_skip']}\n")
    return L


def md_inline_native(n, doc):
    """inline_native, inline_sqlite: the inline backend natively (bench/inline-native.sh)."""
    d = inline_native(n)
    if not d:
        return []
    cmds = n.get("inline_native_commands", {})
    L = ["\n### The inline backend, native (bench/inline-native.sh)\n",
         "One thread calling `bench_work` flat out on CPU 0, bfcollector on CPU 1, every tool "
         "once in each repetition; medians. Cost = traced minus untraced ns per call (entry "
         "and return); a ratio is the median of the ratios within each repetition.\n"]
    for b, r in d.items():
        cid = f"inline_native.{b}."
        rows = [
            ["untraced", fmt(r["untraced_ns"], 1), "", code(cmds.get(cid + "untraced", ""))],
            ["inline backend, entry and return", fmt(r["inline_cost_ns"], 1),
             f"{fmt(r['inline_seen'])} of {fmt(r['inline_expect'])} events, {fmt(r['inline_lost'])} lost, "
             f"{fmt(r['bytes_per_call'], 2)} ring bytes/call", code(cmds.get(cid + "inline", ""))],
            ["inline backend, entries only", fmt(r["inline_entry_cost_ns"], 1), "",
             code(cmds.get(cid + "inline_entry", ""))],
            ["inline backend, patched, INITIALIZING (stub + mode check)",
             fmt(r["inline_init_cost_ns"], 1), "", code(cmds.get(cid + "inline_init", ""))],
            ["uftrace record, -pg build", fmt(r["uftrace_cost_ns"], 1),
             f"inline / uftrace {fmt_ratio(r['vs_uftrace'])}"
             f"{ratio_range({'ratio_reps': r['vs_uftrace_reps']})}; the -pg loop untraced: "
             f"{fmt(r['pg_untraced_ns'], 1)} ns", code(cmds.get(cid + "uftrace", ""))],
            ["bpftrace, empty uprobe + uretprobe", fmt(r["bpftrace_empty_cost_ns"], 1),
             f"inline / bpftrace {fmt_ratio(r['vs_bpftrace_empty'])}"
             + (f" ({fmt(r['bpftrace_calls'])} calls: single-steps endbr64)" if b == "cet" else ""),
             code(cmds.get(cid + "bpftrace_empty", ""))],
            ["the floor: empty BPF uprobe + uretprobe", fmt(r["floor_cost_ns"], 1),
             f"inline / floor {fmt_ratio(r['vs_floor'])}", code(cmds.get(cid + "floor", ""))],
            ["BPF backend", fmt(r["bpf_cost_ns"], 1), f"inline / BPF {fmt_ratio(r['vs_bpf'])}",
             code(cmds.get(cid + "bpf", ""))],
        ]
        L += [f"\n{b} build, {fmt(r['calls'])} calls:\n",
              md_table(rows, ["", "cost ns/call", "", "command"]),
              f"\nParts: one vDSO clock read {fmt(r['clock_ns'], 1)} ns (a loop of its own, "
              f"{code(cmds.get(cid + 'clock', ''))}); the physical floor, two reads and the bytes "
              f"stored, {fmt(r['record_floor_ns'], 1)} ns ({code(cmds.get(cid + 'record_floor', ''))}); "
              f"the traced call is {fmt(r['above_record_floor_ns'], 1)} ns above it. The stub and "
              f"mode check alone {fmt(r['inline_init_cost_ns'], 1)} ns; the return path (entry "
              f"and return minus entries only) {fmt(r['return_path_ns'], 1)} ns. The least "
              f"disturbed run of each (the minimum over the repetitions): inline "
              f"{fmt(r['best_inline_ns'], 1)} ns, entries only {fmt(r['best_inline_entry_ns'], 1)}, "
              f"uftrace {fmt(r['best_uftrace_ns'], 1)}, bpftrace {fmt(r['best_bpftrace_empty_ns'], 1)}, "
              f"one clock read {fmt(r['best_clock_ns'], 1)}, the physical floor "
              f"{fmt(r['best_record_floor_ns'], 1)}.\n"]
    q = n.get("inline_sqlite") or []
    if q:
        def m(k):
            v = [r.get(k) for r in q if r.get(k) is not None]
            return statistics.median(v) if v else None
        u, i, e, bp, cpr = (m("untraced_ns"), m("inline_ns"), m("bpftrace_empty_ns"),
                            m("bpf_ns"), m("calls_per_round"))
        per = lambda x: (x - u) / cpr if x is not None and u is not None and cpr else None
        L += ["libsqlite3's API (the workload of `bench/sqlite-api.sh`, "
              f"{fmt(m('probes'))} functions, {fmt(cpr)} traced calls per round, "
              f"{fmt(m('inline_attached'))} rewritten inline), median round:\n",
              md_table([["untraced", fmt(u / 1e3 if u else None, 1), "",
                         code(cmds.get("inline_sqlite.untraced", ""))],
                        ["inline backend", fmt(i / 1e3 if i else None, 1), fmt(per(i), 1),
                         code(cmds.get("inline_sqlite.inline", ""))],
                        ["bpftrace, empty", fmt(e / 1e3 if e else None, 1), fmt(per(e), 1),
                         code(cmds.get("inline_sqlite.bpftrace_empty", ""))],
                        ["BPF backend", fmt(bp / 1e3 if bp else None, 1), fmt(per(bp), 1),
                         code(cmds.get("inline_sqlite.bpf", ""))]],
                       ["", "round µs", "cost ns/call", "command"]), ""]
    return L


def md_codec(n, doc):
    """@codec: bench_codec's own output, verbatim."""
    if not n["codec"]:
        return []
    return ["\nThe library alone (`user/lib/tests/bench_codec.c`, its own synthetic stream, "
            "same event count): " + code(n["commands"].get("codec", "")) + "\n",
            "```\n" + "\n".join(n["codec"]) + "\n```"]


def md_collector_profile(n, doc):
    """The collector's perf profile (--profile) by symbol and by stage."""
    if not n["profile"]:
        return []
    st = n.get("profile_stages") or {}
    bf = n.get("collector_bytefrog") or {}
    per_ev = 1e9 / bf["events_per_cpu_s"] if bf.get("events_per_cpu_s") else None
    return ["\nWhere the collector's time goes (Bytefrog run, "
            + code(n.get("profile_command", "")) + "), top symbols:\n",
            md_table([[f"{p['pct']:.1f}%", code(p["symbol"])] for p in n["profile"][:20]],
                     ["self", "symbol"]),
            "\nThe same samples by stage (all symbols), and what each costs per event:\n",
            md_table([[name, f"{pct:.1f}%", fmt(pct / 100 * per_ev if per_ev else None, 1)]
                      for name, pct in sorted(st.items(), key=lambda x: -x[1])],
                     ["stage", "share", "ns/event"])]


def md_collector_cpu(n, doc):
    """The collector's CPU at the maximum rate and while sampling counters, per place."""
    L = [""]
    for k, g in doc["kernels"].items():
        c = g["collector_cpu"]
        if c:
            L.append(f"- CPU while the kernel records at its maximum rate ({k}): "
                     f"{fmt(c['cpu_pct'], 1)} % of a core at {fmt(c['events_per_s'])} events/s "
                     f"(two threads flat out; {code(c['command'])}).")
    for k, g in doc["kernels"].items():
        if g.get("counters"):
            L.append(counters_line(k, g["counters"]))
    if (doc.get("native") or {}).get("counters"):
        L.append(counters_line("native, BPF backend", doc["native"]["counters"]))
    L.append("")
    return L


def md_usdt(doc):
    """A USDT marker's cost per hit (results.json: native.usdt,
    kernels.K.usdt), over the untraced pass, from bench/usdt-cost.sh."""
    places = [("native", (doc.get("native") or {}).get("usdt"))]
    places += [(k, g.get("usdt")) for k, g in doc["kernels"].items()]
    rows = []
    for where, u in places:
        for site, r in (u or {}).items():
            rows.append([where, site, fmt(r.get("untraced_ns"), 1),
                         fmt(r.get("kmod_ns")) if "kmod_ns" in r else "-",
                         fmt(r.get("bpf_ns")) if "bpf_ns" in r else "-",
                         fmt(r.get("bpftrace_ns")) if "bpftrace_ns" in r else "-",
                         " ".join("%s %s" % (t, ",".join(str(x) for x in r["seen_" + t]))
                                  for t in ("kmod", "bpf", "bpftrace") if "seen_" + t in r)])
    if not rows:
        return []
    return ["## A USDT marker", "",
            "ns per hit over the untraced pass (median), a probe with two arguments; "
            "nop1 is the one-byte nop <sys/sdt.h> emits, nop5 a five-byte nop, which "
            "kernels from 6.18 turn into a call after the first hit (bench/usdt-cost.sh).", "",
            md_table(rows, ["where", "site", "untraced ns", "module", "BPF backend",
                            "bpftrace", "hits counted"]), ""]


# results.md, section by section, in this order.  Each section says what
# it shows (its docstring names the raw results and the results.json keys
# it reads) and returns its lines; write_md walks the table.  DOC sections
# take the whole document, KERNEL ones run for each guest kernel in turn
# (all of one kernel's before the next's), NATIVE ones when this machine
# was measured.
MD_LAYOUT = (
    ("doc", (md_preamble, md_targets, native_floor_md, sqlite_md, md_usdt)),
    ("kernel", (md_per_call, md_cet, md_size, md_throws, md_scaling, md_loss,
                md_bpf_guest, md_profile)),
    ("native", (md_collector, hq_large_md, md_bpf_native, md_inline_native, live_view_md, md_codec,
                md_collector_profile, md_collector_cpu)),
)


def write_md(doc, path, notes):
    L = []
    n = doc.get("native") or {}
    for scope, sections in MD_LAYOUT:
        for k, g in (doc["kernels"].items() if scope == "kernel" else [(None, None)]):
            for section in sections:
                if scope == "doc":
                    L += section(doc)
                elif scope == "kernel":
                    L += section(k, g, doc)
                elif n:
                    L += section(n, doc)
    if notes:
        L.append(notes.rstrip() + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--native")
    ap.add_argument("--profile")
    ap.add_argument("--guest", action="append", default=[], help="KVER=FILE")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--notes", default=os.path.join(os.path.dirname(__file__), "notes.md"))
    a = ap.parse_args()

    guests = {}
    for gspec in a.guest:
        k, _, p = gspec.partition("=")
        guests[k] = guest_report(k, p)
    native = native_report(a.native, a.profile)
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "native": native, "kernels": guests}
    doc["targets"] = claims_of(guests, native)
    with open(a.json, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    notes = ""
    if a.notes and os.path.exists(a.notes):
        with open(a.notes, encoding="utf-8") as f:
            notes = f.read()
    write_md(doc, a.md, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
