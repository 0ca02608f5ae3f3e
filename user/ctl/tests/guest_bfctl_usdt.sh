# SPDX-License-Identifier: GPL-2.0
# Sourced by guest_bfctl.sh: its USDT checks (section "usdt"), on the
# fixture fx_usdt (user/lib/tests/resolve_fixtures/fx_usdt.c).

# Each thread's calls and USDT hits, as fx_usdt makes them, against what
# bfctl record --events gave.
usdt_expect_py='
import json, sys
U64 = (1 << 64) - 1
def call(f, *inner):
    return [">" + f] + [x for i in inner for x in i] + ["<" + f]
def mark(name, *args):
    return ["*%s(%s)" % (name, ",".join(str(a) for a in args))]
def rounds(k):
    out = []
    for r in range(2):
        neg = -(10 * k + r) - 1
        out += call("fxu_work", mark("fxu:zero"), mark("fxu:one", neg),
                    mark("fxu:three", 0x123456789abcdef0 + r, 200 + r, -300 - r),
                    mark("fxu:six", neg, 0xfedcba9876543210 + r, -1 - r,
                         -123456, 7, [-(1 << 63), -1][r]))
        out += call("fxu_gated", mark("fxu:gated", 10 * k + r))
        out += call("fxul_call", mark("fxul:lib", -7 * r - k, U64 - r))
    return out
def seqs(events, pid):
    seq = {}
    for e in events:
        if e.get("tgid") != pid or e["kind"] not in ("enter", "exit", "mark"):
            continue
        name = e["name"].split("!", 1)[1]
        tok = {"enter": ">", "exit": "<"}.get(e["kind"])
        tok = tok + name if tok else "*%s(%s)" % (
            name, ",".join(str(a) for a in e["args"]))
        seq.setdefault(e["tid"], []).append(tok)
    return seq
'

usdt_run_check() {
	local name="run --usdt: each thread's calls and USDT hits in order, every argument exact (0, 1, 3, 6 arguments, a semaphore, a library)"
	settle
	if ! bf --json run -u 'fxu*:*' -p 'fx_usdt:fxu_*' -p 'libfxusdt*:fxul_*' -- \
	     "$FX/fx_usdt" >"$T/run.json" 2>"$T/err"; then
		note "$T/err" "$T/run.json"; not_ok "$name # run failed"; return
	fi
	bf stop >/dev/null
	bf --json record --last --events >"$T/ev.json" 2>>"$T/err"
	if python3 - "$T/run.json" "$T/ev.json" >"$T/cmp" 2>&1 <<EOF
$usdt_expect_py
# bfctl's JSON, and the fixture's "gated N" lines on the same stdout
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
gated = [l for l in open(sys.argv[1]) if l.startswith("gated")]
assert len(gated) == 4, "the fixture saw the semaphore down"
pid = runs[0]["pid"]
seq = seqs([json.loads(l) for l in open(sys.argv[2]) if l.strip()], pid)
for tid, s in sorted(seq.items()):
    print("%d: %s" % (tid, " ".join(s)))
assert seq.get(pid) == rounds(0), "main thread: want %s" % " ".join(rounds(0))
others = [s for tid, s in seq.items() if tid != pid]
assert others == [rounds(1)], "worker: want %s" % " ".join(rounds(1))
EOF
	then
		note "$T/cmp"; ok "$name"
	else
		note "$T/cmp" "$T/err"; not_ok "$name"
	fi
}

# The semaphore of fxu:gated and the first byte of every site, in the
# process now, as "sema N; sites B B ...": from the --list JSON's offsets.
usdt_peek() { # list.json pid
	python3 - "$1" "$2" <<'EOF'
import json, sys
lst = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
maps = []
for l in open("/proc/%d/maps" % pid):
    f = l.split()
    if len(f) < 6:
        continue
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    maps.append((f[5], int(f[2], 16), lo, hi))
def addr(path, off):
    for p, moff, lo, hi in maps:
        if p == path and moff <= off < moff + (hi - lo):
            return lo + off - moff
    raise SystemExit("no mapping of %s at file offset %#x" % (path, off))
mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
def peek(a, n):
    mem.seek(a)
    return mem.read(n)
sema, sites = None, []
for p in lst["usdt"]:
    sites.append("%02x" % peek(addr(p["path"], p["offset"]), 1)[0])
    if p["semaphore_offset"]:
        sema = int.from_bytes(peek(addr(p["path"], p["semaphore_offset"]), 2), "little")
print("sema %s; sites %s" % (sema, " ".join(sites)))
EOF
}

usdt_attach_check() {
	local name="attach --usdt: semaphore raised while attached, back after stop; no probe byte left; counts equal bpftrace's usdt: counts"
	local pats=(-u 'fxu:*' -u 'fxul:lib' -p 'fx_usdt:fxu_work')
	local before during after prog
	settle
	fixture "$T/fxu.out" "$FX/fx_usdt" wait || { not_ok "$name # fixture"; return; }
	bf --json attach --pid "$FXPID" --list "${pats[@]}" >"$T/list.json" 2>"$T/err" &&
	before=$(usdt_peek "$T/list.json" "$FXPID" 2>>"$T/err") &&
	bf attach --pid "$FXPID" "${pats[@]}" >/dev/null 2>>"$T/err" &&
	tracing &&
	during=$(usdt_peek "$T/list.json" "$FXPID" 2>>"$T/err")
	if [[ -z $during ]]; then
		note "$T/err"; not_ok "$name # attach"; kill -KILL "$FXPID"; return
	fi
	: >"$T/bpf.out"
	if [[ -n $have_bpftrace ]]; then
		prog=$(python3 - "$T/list.json" <<'EOF'
import json, sys
lst = json.load(open(sys.argv[1]))
spec = ",".join("usdt:%s:%s" % (p["path"], p["symbol"]) for p in lst["usdt"])
print(spec + ' { @[probe] = count(); } BEGIN { printf("READY\\n"); } interval:s:1 { print(@); }')
EOF
)
		bpftrace -f json -p "$FXPID" -e "$prog" >"$T/bpf.out" 2>&1 7>&- &
		BPFPID=$!
		bg_pids+=("$BPFPID")
		wait_for "$T/bpf.out" 'READY' 120 || { note "$T/bpf.out"; not_ok "$name # bpftrace"; kill -KILL "$FXPID"; return; }
	fi
	: >"$T/rec.err"
	bf --json record >"$T/rec.json" 2>"$T/rec.err" &
	local recpid=$!
	bg_pids+=("$recpid")
	rec_ready "$T/rec.err"
	kill -USR1 "$FXPID"
	wait_for "$T/fxu.out" '^done' 120
	[[ -n $have_bpftrace ]] && bpftrace_printed_stop "$T/bpf.out"
	bf stop >/dev/null 2>>"$T/err"
	bounded_wait "$recpid" 60
	after=$(usdt_peek "$T/list.json" "$FXPID" 2>>"$T/err")
	kill -USR1 "$FXPID"
	bounded_wait "$FXPID" 30
	echo "# before: $before"; echo "# during: $during"; echo "# after:  $after"
	if python3 - "$T/rec.json" "$T/bpf.out" "$before" "$during" "$after" "$T/fxu.out" >"$T/cmp" 2>&1 <<'EOF'
import json, sys
rec = json.load(open(sys.argv[1]))
before, during, after = sys.argv[3:6]
got = {m["name"].split("!", 1)[1]: m["calls"] for m in rec["methods"]}
want = {"fxu:zero": 4, "fxu:one": 4, "fxu:three": 4, "fxu:six": 4,
        "fxu:gated": 4, "fxul:lib": 4, "fxu_work": 4}
bpf = {}
for l in open(sys.argv[2]):
    if l.startswith("{") and '"type": "map"' in l:
        for k, v in json.loads(l)["data"]["@"].items():
            bpf[":".join(k.split(":")[-2:])] = v
for k in sorted(want):
    print("%-10s bfctl %3s  bpftrace %4s  expected %d" % (k, got.get(k), bpf.get(k, "-"), want[k]))
assert got == want, "bfctl's counts"
if bpf:
    assert all(bpf.get(k) == v for k, v in want.items() if ":" in k), "bpftrace's counts"
gated = [l for l in open(sys.argv[6]) if l.startswith("gated")]
assert len(gated) == 4, "the fixture saw the semaphore down"
assert before.startswith("sema 0;"), "semaphore raised before the attach"
assert during.startswith("sema 1;"), "semaphore not raised"
assert set(during.split("sites ")[1].split()) == {"cc"}, "a site without its breakpoint"
assert after.split(";")[0] == before.split(";")[0], "semaphore not back"
assert after == before, "a site byte changed"
EOF
	then
		note "$T/cmp"; ok "$name"
	else
		note "$T/cmp" "$T/err" "$T/rec.err"; not_ok "$name"
	fi
}

sec_usdt() {
	usdt_run_check
	usdt_attach_check
	settle
	check "run --usdt alone, no --pattern: every hit of fxu:zero counted" bash -c '
	"$1" run -u "fxu:zero" -- "$2/fx_usdt" >/dev/null || exit 1
	"$1" stop >/dev/null
	"$1" --json record --last | python3 -c "
import json, sys
n = {m[\"name\"]: m[\"calls\"] for m in json.load(sys.stdin)[\"methods\"]}
print(\"#\", n)
assert n == {\"fx_usdt!fxu:zero\": 4}"' _ "$BFCTL" "$FX"
	expect_fail "attach --usdt: a malformed glob is refused before anything" 2 \
		"usdt 'a:b:c': give PROVIDER:NAME" \
		bf attach --pid $$ -u 'a:b:c'
	expect_fail "attach --usdt: nothing matching is said, nothing attached" 5 \
		"no USDT probe of process [0-9]+ matches --usdt" \
		bf attach --pid $$ -u 'nosuchprovider:*'
}
