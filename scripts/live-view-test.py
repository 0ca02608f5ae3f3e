#!/usr/bin/env python3
"""bfhq --http in a real browser, while a traced target runs.

Usage: live-view-test.py [--runs N] [--out DIR] [--json FILE] [--guest KVER]
                         [--data-udp]

bfhq --http and headless Chromium on this machine; the calltree target of
the selftests traced by bfcollector and bfctl, either here with the BPF
backend (root), or with --guest in a test guest on kernel KVER with the
module, where the collector streams to this bfhq through the guest's
forwarded ports (scripts/guest-run --forward): the remote viewing of seed
002.  With --data-udp the data go in UDP datagrams (bfcollector
--data-udp, bfhq --udp: docs/udp-data.md), the control on TCP, from here
or from the guest (scripts/guest-run --udp-to-host); make bench measures
both.  Chromium is driven through its DevTools protocol
(--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4).  Checks:

  - on a live directory written by the test with every kind of line (no
    root needed), the page's call tree equals what bfhq --replay makes of
    it (the router's rules, user/hq/route_*.c: mismatched and orphan
    exits, throws, bubbles, voids, escaped and renamed thread names);
    natively only;
  - a page opened after the target's first run shows that run's calls;
  - each later run's calls appear on the open page (the delay from the
    run's start, when the test tells the target to go, to the first render
    that shows its first call is measured: printed, and written to --json
    for `make bench`; never asserted; each run starts once the page has
    drawn the one before, see settle()).  With bfhq --live-stamps and the
    page's ?stamps, the delay is split in stages (STAGES), their medians
    printed and written to --json too.  With --guest, a run starts when
    the command to run leaves this machine;
  - the page of an inspector (bfhq --counters --http) plots the calls of
    the target's ct_a as bfcollector --counters sampled them, and its last
    value is the calls made (a screenshot of the plots: counters.png);
  - after the trace ends, the page's call tree in calls.txt's canonical
    form equals bfhq's calls.txt exactly, and so does that of a second page
    opened on the finished trace;
  - a screenshot of the page's flame graph draws what its SVG says
    (scripts/flame-render-check.py);
  - with --data-udp: the data came as datagrams, none lost, duplicated
    or malformed (bfhq's counters in meta.json);
  - with --guest: the guest's side ended well, the module unloaded and
    the kernel log is clean.

Output is TAP.  Environment: BFT_CHROMIUM, the browser (default chromium).
Logs, the screenshot and the SVG stay in --out (build/live-view,
build/live-view-KVER, with -udp after --data-udp; the guest's logs in its
guest/).

The test run (scripts/run-tests.sh) runs it natively, then with --guest
on each kernel after that kernel's selftests.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
TOOLS = os.path.join(BUILD, "user")
TARGETS = os.path.join(BUILD, "selftests", "targets")
CT_NEST_REPS = 3          # selftests/bftrace/targets/calltree_shape.h
FN = "calltree!ct_a"      # how bfcollector names ct_a
# A BPF session of the test's own, beside any real one (and the selftests').
PIN_DIR = "/sys/fs/bpf/bftrace-live-view"
# In a test guest (scripts/guest-selftests.sh has loaded bftrace.ko), the
# module; on this machine, BPF.
BACKEND = "kmod" if os.environ.get("BFT_GUEST") else "bpf"
# How long the browser may take to answer
CDP_TIMEOUT = 30


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def result(self, good, desc, notes=()):
        self.n += 1
        self.failed += not good
        print(f"{'ok' if good else 'not ok'} {self.n} - {desc}", flush=True)
        for line in notes:
            print(f"# {line}", flush=True)
        return good

    def note(self, line):
        print(f"# {line}", flush=True)


class Fail(Exception):
    """A step the rest cannot go on without."""


def wait_for(pred, timeout, what, step=0.01):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise Fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def end_all(procs):
    """SIGTERM to each of procs still running, SIGKILL after 30 s."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def viewer_url(log, proc, what):
    """The address of the live viewer that proc (what) says in log."""
    def url():
        with open(log, "rb") as f:
            text = f.read().decode(errors="replace")
        for line in text.splitlines():
            if "live viewer on " in line:
                return line.split("live viewer on ", 1)[1].split()[0]
        if proc.poll() is not None:
            raise Fail(f"{what} exited:\n{text}")
        return None
    return wait_for(url, 10, f"{what}'s live viewer")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Headless Chromium over --remote-debugging-pipe."""

    def __init__(self, chromium, profile, log):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium's ends above 4, so that moving them cannot clobber them.
        to_chrome_r, from_chrome_w = self.above_4(to_chrome_r), self.above_4(from_chrome_w)

        # bash puts the pipes on fds 3 and 4, where Chromium wants
        # them (subprocess closes any fd it was not asked to pass).
        argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", f"--user-data-dir={profile}",
                "--hide-scrollbars", "--window-size=1280,2400",
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding", "about:blank"]
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} '
             f'{to_chrome_r}<&- {from_chrome_w}>&-', "bash"] + argv,
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            pass_fds=(to_chrome_r, from_chrome_w))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    @staticmethod
    def above_4(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return high

    def call(self, method, session=None, timeout=None, **params):
        timeout = timeout or CDP_TIMEOUT
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") != self.next_id:
                    self.events.append(reply)
                    continue
                if "error" in reply:
                    raise Fail(f"{method}: {reply['error']}")
                return reply.get("result", {})
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.from_chrome], [], [], left)[0]:
                raise Fail(f"{method}: no answer from the browser in {timeout} s")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise Fail(f"{method}: the browser closed its pipe")
            self.buf += chunk

    def page(self, url):
        """A new tab on url; its session id."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target,
                            flatten=True)["sessionId"]
        self.call("Page.enable", session)
        self.call("Page.navigate", session, url=url)
        return session

    def eval(self, session, expr):
        r = self.call("Runtime.evaluate", session, expression=expr,
                      returnByValue=True)
        if "exceptionDetails" in r:
            raise Fail(f"{expr}: {r['exceptionDetails'].get('text')}: "
                       f"{r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def close(self):
        # a browser that died (seen under TCG) has nothing left to close
        try:
            self.call("Browser.close", timeout=10)
        except (Fail, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)


class Agent:
    """The traced side: the calltree target, bfcollector, bfctl."""

    def __init__(self, out, udp=False):
        self.out = out
        self.procs = []
        self.udp = udp      # --data-udp: the data in datagrams (docs/udp-data.md)
        self.env = dict(os.environ, BFT_BACKEND=BACKEND, BFT_BPF_PIN_DIR=PIN_DIR)
        shutil.rmtree(PIN_DIR, ignore_errors=True)   # a failed run's

    def log(self, name):
        return open(os.path.join(self.out, name + ".log"), "wb")

    def spawn(self, argv, name, **kw):
        p = subprocess.Popen(argv, env=self.env, stdout=self.log(name),
                             stderr=subprocess.STDOUT, **kw)
        self.procs.append(p)
        return p

    def start(self, hq, counters, tracing):
        """Trace the target into the HQ at hq (HOST:PORT), the counters to
        the inspector at counters; tracing() returns once that HQ has
        told the collector to start."""
        self.target = subprocess.Popen([os.path.join(TARGETS, "calltree")],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=self.log("target"))
        self.procs.append(self.target)
        self.expect_line("ready")
        self.coll = self.spawn([os.path.join(TOOLS, "bfcollector"), "--hq", hq,
                                "--protocol", "2", "--until-exit", "--counters",
                                counters, "--counters-interval", "100"] +
                               (["--data-udp"] if self.udp else []), "bfcollector")
        tracing()
        ctl = subprocess.run([os.path.join(TOOLS, "bfctl"), "attach", "--pid",
                              str(self.target.pid), "-p", "calltree:ct_*",
                              "-p", "libbftgt*:*"], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=60)
        if ctl.returncode:
            raise Fail("bfctl attach: " + ctl.stdout.decode(errors="replace"))

    def expect_line(self, want, timeout=60):
        fd = self.target.stdout.fileno()
        end = time.monotonic() + timeout
        line = b""
        while time.monotonic() < end:
            if not select.select([fd], [], [], max(0, end - time.monotonic()))[0]:
                break
            c = os.read(fd, 1)
            if not c:
                break
            if c == b"\n":
                if line.decode() == want:
                    return
                line = b""
            else:
                line += c
        raise Fail(f"the target did not say {want!r}")

    def run_target(self):
        """One run of the target's calls; its start on the wall clock (ms)."""
        t0 = time.time() * 1000
        self.target.stdin.write(b"r")
        self.target.stdin.flush()
        self.expect_line("done")
        return t0

    def end_target(self):
        self.target.stdin.write(b"q")
        self.target.stdin.flush()
        self.target.wait(30)
        self.coll.wait(120)

    def stop(self):
        end_all(reversed(self.procs))
        shutil.rmtree(PIN_DIR, ignore_errors=True)


class GuestAgent:
    """The traced side in a test guest on kernel kver, with the module
    (scripts/guest-run --forward): this script's --agent mode there, told
    what to do over a line-based control connection to this machine.  A
    run's start is when the command to run leaves here, so its delay also
    holds the way into the guest."""

    def __init__(self, out, kver, udp=False):
        self.out = out
        self.kver = kver
        self.udp = udp
        self.guest = None
        self.conn = None
        self.buf = b""
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)

    def start(self, hq, counters, tracing):
        port = hq.rsplit(":", 1)[1]
        cport = counters.rsplit(":", 1)[1]
        ctl = self.listener.getsockname()[1]
        self.logf = open(os.path.join(self.out, "guest.log"), "wb")
        self.guest = subprocess.Popen(
            [os.path.join(ROOT, "scripts", "guest-run"), "--kernel", self.kver,
             "--timeout", "900", "--out", os.path.join(self.out, "guest"),
             "--export", os.path.join(self.out, "guest"),
             "--forward", port, "--forward", cport, "--forward", str(ctl)] +
            (["--udp-to-host"] if self.udp else []) +
            ["--", "python3", "scripts/live-view-test.py", "--agent", str(ctl), port, cport] +
            (["--data-udp"] if self.udp else []),
            stdin=subprocess.DEVNULL, stdout=self.logf, stderr=subprocess.STDOUT)
        # a guest that waits for the lock, then boots under TCG
        self.listener.settimeout(1)
        end = time.monotonic() + 600
        while self.conn is None:
            try:
                self.conn, _ = self.listener.accept()
            except socket.timeout:
                if self.guest.poll() is not None or time.monotonic() > end:
                    raise Fail("the guest's agent did not connect:\n" + self.guest_log())
        self.conn.settimeout(None)
        self.expect("collecting", 300)
        tracing()
        self.tell("attach")
        self.expect("attached", 120)

    def guest_log(self):
        with open(os.path.join(self.out, "guest.log"), "rb") as f:
            return f.read().decode(errors="replace")[-3000:]

    def tell(self, what):
        self.conn.sendall(what.encode() + b"\n")

    def expect(self, want, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.conn], [], [], left)[0]:
                raise Fail(f"the guest's agent did not say {want!r} in {timeout} s")
            chunk = self.conn.recv(4096)
            if not chunk:
                raise Fail(f"the guest's agent went away before {want!r}:\n"
                           + self.guest_log())
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        if line.decode(errors="replace") != want:
            raise Fail(f"the guest's agent said {line!r}, not {want!r}")

    def run_target(self):
        t0 = time.time() * 1000
        self.tell("run")
        self.expect("done", 120)
        return t0

    def end_target(self):
        self.tell("end")
        self.expect("ended", 300)

    def stop(self):
        """The guest's end: None, or why it was not clean."""
        if self.conn:
            self.conn.close()
        self.listener.close()
        if not self.guest:
            return "the guest was never started"
        try:
            self.guest.wait(300)
        except subprocess.TimeoutExpired:
            self.guest.terminate()
            self.guest.wait()
        self.logf.close()
        last = [line for line in self.guest_log().splitlines()
                if line.startswith(f"guest-run: {self.kver}: exit status")]
        if self.guest.returncode or not last or "dmesg clean" not in last[-1]:
            return (f"guest-run exited {self.guest.returncode}: "
                    f"{last[-1] if last else 'no exit line'}")
        return None


def agent_main(ctl_port, hq_port, counters_port, out, udp):
    """--agent, in a test guest: the module loaded, the traced side driven
    by the test on the host (GuestAgent)."""
    host = os.environ["BFT_HOST_ADDR"]
    ko = os.path.join(BUILD, f"kmod-{os.uname().release}", "bftrace.ko")
    loaded = os.path.isdir("/sys/module/bftrace")
    if not loaded:
        subprocess.run(["insmod", ko], check=True)
    conn = socket.create_connection((host, ctl_port), timeout=60)
    conn.settimeout(None)
    lines = conn.makefile("rb")
    agent = Agent(out, udp)
    rc = 0

    def command():
        line = lines.readline()
        if not line:
            raise Fail("the test went away")
        return line.decode().strip()

    def tracing():
        conn.sendall(b"collecting\n")
        if command() != "attach":
            raise Fail("the test did not say attach")
    try:
        agent.start(f"{host}:{hq_port}", f"{host}:{counters_port}", tracing)
        conn.sendall(b"attached\n")
        while True:
            what = command()
            if what == "run":
                agent.run_target()
                conn.sendall(b"done\n")
            elif what == "end":
                agent.end_target()
                conn.sendall(b"ended\n")
                break
            else:
                raise Fail(f"unknown command {what!r}")
    except (Fail, OSError, subprocess.SubprocessError) as e:
        print(f"live-view-test --agent: {e}", flush=True)
        conn.sendall(f"error: {e}\n".encode(errors="replace"))
        rc = 1
    finally:
        agent.stop()
        conn.close()
        if not loaded:
            rc |= subprocess.run(["rmmod", "bftrace"]).returncode
    return rc


def check_datagrams(tap, pipe):
    """With --data-udp: the data came in datagrams, and all of them."""
    path = os.path.join(pipe.hqout, "trace-1", "live", "meta.json")
    try:
        with open(path) as f:
            c = json.load(f).get("counters", {})
    except (OSError, ValueError) as e:
        c = {"error": str(e)}
    bad = {k: c.get(k) for k in ("udp_lost", "udp_duplicated", "udp_malformed",
                                 "udp_late") if c.get(k)}
    tap.result(c.get("udp_datagrams", 0) > 0 and not bad,
               f"the data came as {c.get('udp_datagrams', 0)} datagrams"
               + (f", but {bad}" if bad else ", none lost, duplicated or malformed"),
               [] if c.get("udp_datagrams") else [f"counters in {path}: {c}"])


class Pipeline:
    """bfhq --http here, and an agent (here or in a guest) tracing into it."""

    def __init__(self, out, agent, udp=False):
        self.out = out
        self.agent = agent
        self.udp = udp
        self.procs = []

    def text(self, name):
        with open(os.path.join(self.out, name + ".log"), "rb") as f:
            return f.read().decode(errors="replace")

    def start(self):
        port = free_port()
        self.hqout = os.path.join(self.out, "hqout")
        shutil.rmtree(self.hqout, ignore_errors=True)
        self.hq = subprocess.Popen(
            [os.path.join(TOOLS, "bfhq"), "--port", str(port), "--output", self.hqout,
             "--start", "--timeout", "1200", "--http", "127.0.0.1:0", "--live-stamps",
             "-v"] + (["--udp"] if self.udp else []), stdout=open(os.path.join(self.out, "bfhq.log"), "wb"),
            stderr=subprocess.STDOUT)
        self.procs.append(self.hq)

        self.url = viewer_url(os.path.join(self.out, "bfhq.log"), self.hq, "bfhq")
        # the counters' inspector, with a page of its own that plots them
        cport = free_port()
        self.insp = subprocess.Popen(
            [os.path.join(TOOLS, "bfhq"), "--counters", str(cport), "--json",
             "--output", os.path.join(self.out, "inspector"), "--http", "127.0.0.1:0",
             "--timeout", "1200"], stdin=subprocess.PIPE,
            stdout=open(os.path.join(self.out, "inspector.json"), "wb"),
            stderr=open(os.path.join(self.out, "inspector.log"), "wb"))
        self.procs.append(self.insp)
        self.counters_url = viewer_url(os.path.join(self.out, "inspector.log"),
                                       self.insp, "bfhq --counters")
        self.agent.start(f"127.0.0.1:{port}", f"127.0.0.1:{cport}", lambda: wait_for(
            lambda: "heartbeat mode T" in self.text("bfhq"), 60,
            "the collector to start tracing"))
        self.insp.stdin.write(f"add Method:{FN} calls\n".encode())
        self.insp.stdin.flush()

    def sampled(self):
        """The inspector's last sampled value of FN's calls, or None."""
        last = None
        with open(os.path.join(self.out, "inspector.json"), "rb") as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                if j.get("event") == "sample":
                    last = j["values"].get(f"Method:{FN} calls", last)
        return last

    def run_target(self):
        return self.agent.run_target()

    def end_target(self):
        self.agent.end_target()

    def stop(self):
        """None, or why the agent's side did not end cleanly."""
        why = self.agent.stop()
        end_all(self.procs)
        return why


# Every kind of line of the live format, in the order bfhq routes them:
# (thread or None for a marker, line without its sequence number and time),
# "void" for a gap of one sequence number.  The page must make of them what
# the router (user/hq/route_*.c) makes (bfhq --replay): mismatched exits,
# exits of frames never seen, throws, bubbles, voids, renamed and escaped
# thread names, a thread only named; a C++ method, which the page names by
# the display form bfhq's feed sends with it, the whole signature on hover.
EDGE_WORK = "app!Work<std::vector<int, std::allocator<int> > >::run(int) const"
EDGE_WORK_SHOWN = "app!Work<std::vector<int>>::run"
EDGE_NAMES = ("M 1 main\nM 2 " + EDGE_WORK + "\nM 3 leaf\\x09tabbed\nX 7 std::bad_alloc\n"
              "T 1 main (1/1)\nT 2 worker\nT 2 worker, renamed (1/2)\n"
              "T 3 back\\\\slash\\x01 (1/3)\nT 5 named only\n")
EDGE_EVENTS = [
    (1, "e 1"), (2, "e 2"), (1, "e 2"), (2, "x 2"), (1, "e 3"), (1, "x 2"),
    (1, "! 1 7 12"), (1, "u 1 7"), (1, "x 1"), (3, "x 4"), (1, "e 4"),
    (1, "x 1"), (1, "t 4"), (2, "e 3"), (None, "m bftrace.lost\t5"), "void",
    (1, "e 1"), (3, "e 2"), (3, "u 2 9"), (1, "x 1"), (2, "x 3"), (4, "e 1"),
]


def write_edge_trace(outdir):
    """The live directory of EDGE_EVENTS as trace-1 under outdir."""
    live = os.path.join(outdir, "trace-1", "live")
    os.makedirs(live)
    streams, last, seq = {}, {}, 0
    for ev in EDGE_EVENTS:
        if ev == "void":
            # into every thread's stream so far, at its last time
            for name, lines in streams.items():
                if name != "markers":
                    lines.append(f"| {seq + 1} {last[name]} gap {seq} 1")
            seq += 1
            continue
        thread, text = ev
        name = "markers" if thread is None else str(thread)
        op, rest = text.split(" ", 1)
        streams.setdefault(name, []).append(f"{op} {seq} {seq * 10} {rest}")
        last[name] = seq * 10
        seq += 1
    for name, lines in streams.items():
        data = "".join(line + "\n" for line in lines).encode()
        with open(os.path.join(live, f"stream-{name}.data"), "wb") as f:
            f.write(data)
        with open(os.path.join(live, f"stream-{name}.index"), "wb") as f:
            f.write(struct.pack("<QQQQII", 0, len(data), 0, seq * 10, len(lines), 1))
    with open(os.path.join(live, "names"), "w") as f:
        f.write(EDGE_NAMES)
    with open(os.path.join(live, "meta.json"), "w") as f:
        json.dump({"format": 1, "trace": 1, "run": 0, "protocol": 2,
                   "state": "finished", "message": "", "resolution_us": 1,
                   "start_wall_us": 0, "counters": {"gaps": 1, "gap_missing": 1}}, f)
    return live


def check_edges(tap, chromium, out, tmp):
    """The page's tree of every kind of line equals bfhq --replay's."""
    edge = os.path.join(out, "edge")
    live = write_edge_trace(edge)
    rp = subprocess.run([os.path.join(TOOLS, "bfhq"), "--replay", live, "-o",
                         os.path.join(edge, "replay")], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
    try:
        with open(os.path.join(edge, "replay", "calls.txt"), encoding="utf-8") as f:
            want = f.read()
    except OSError:
        tap.result(False, "bfhq --replay rebuilds calls.txt of every kind of line",
                   rp.stdout.splitlines())
        return
    log = open(os.path.join(out, "bfhq-edge.log"), "wb")
    hq = subprocess.Popen([os.path.join(TOOLS, "bfhq"), "--port", str(free_port()),
                           "--output", edge, "--http", "127.0.0.1:0", "--timeout", "120"],
                          stdout=log, stderr=subprocess.STDOUT)
    browser = None
    try:
        base = viewer_url(os.path.join(out, "bfhq-edge.log"), hq, "bfhq")
        browser = Browser(chromium, os.path.join(tmp, "edge-profile"),
                          open(os.path.join(out, "chromium-edge.log"), "wb"))
        page = browser.page(base + "#trace=1")
        wait_for(lambda: browser.eval(page, "typeof bft === 'object' && bft.model.ended"),
                 60, "the page to read the trace")
        got = browser.eval(page, "bft.callsTxt()")
        bad = browser.eval(page, "bft.model.bad")
        # what the tree and the top table show of method 2, and on hover
        shown = browser.eval(page, "[...document.querySelectorAll("
                             "'#threads [title], #top [title]')].map("
                             "e => [e.title, e.textContent])")
    except Fail as e:
        got, bad, shown = str(e), None, []
    finally:
        if browser:
            browser.close()
        hq.terminate()
        hq.wait()
    with open(os.path.join(edge, "page-calls.txt"), "w") as f:
        f.write(got or "")
    tap.result(got == want and bad == 0 and "x?" in want and "x!" in want and " |" in want,
               "the page's tree of every kind of line equals bfhq --replay's calls.txt",
               [] if got == want else [f"diff {edge}/replay/calls.txt {edge}/page-calls.txt"])
    work = [text for title, text in shown or [] if title == EDGE_WORK]
    good = (len(work) >= 2 and not any(EDGE_WORK in text for _, text in shown) and
            all(t == EDGE_WORK_SHOWN or t.startswith(EDGE_WORK_SHOWN + "  ") for t in work))
    tap.result(good, "the page names a C++ method by its display form, the whole signature "
               f"on hover ({len(work)} places)", [] if good else [repr(shown)])


# The stages of a call's way to the page, as the wall clock (ms) marks them:
# the run's start (the test), bfhq routes it (live/stamps), its microseconds
# came (formatted), its index entry is written, the HTTP feed queues it
# (the "sent" event), the page's EventSource gets it, the page draws it.
STAGES = (
    ("call_to_routed", "run start -> bfhq routed it (target, ring, bfcollector, TCP or UDP)"),
    ("routed_to_ready", "routed -> formatted (its microseconds came)"),
    ("ready_to_indexed", "formatted -> on disk and indexed (the live flush)"),
    ("indexed_to_sent", "indexed -> queued as an SSE event (inotify, feed)"),
    ("sent_to_got", "queued -> the page's EventSource handler (HTTP, browser)"),
    ("got_to_drawn", "handler -> the render that shows it"),
)


def read_stamps(path):
    """bfhq --live-stamps' file: seq -> (routed, ready, indexed) in ms."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                v = line.split()
                if len(v) == 4:
                    out[int(v[0])] = tuple(int(x) / 1000 for x in v[1:])
    except OSError:
        pass
    return out


def stages_of(t0, call, stamp):
    """The stage durations (ms) of one call, None where a mark is missing."""
    marks = [t0] + list(stamp or (None, None, None)) + [call.get("sent"),
                                                          call.get("got"),
                                                          call.get("drawn")]
    return {name: (b - a if a is not None and b is not None else None)
            for (name, _), a, b in zip(STAGES, marks, marks[1:])}


def settle(browser, session, delays):
    """Wait until the page has drawn what the runs before sent (its event
    count still for twice the last delay, at least 0.5 s, 10 s at most):
    a run's delay is that of a page with nothing else to draw.  Under TCG
    a page still drawing the last run's tail makes the next run wait for
    it, a second or more."""
    quiet = min(10.0, max(0.5, 2 * delays[-1] / 1000 if delays else 0.5))
    end = time.monotonic() + 60
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        n = browser.eval(session, "bft.model.events")
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.05)


def check_counters(tap, browser, pipe, want):
    """The inspector's page (bfhq --counters --http) plots FN's calls as
    bfcollector --counters sampled them: want, the calls made."""
    key = json.dumps(f"Method:{FN} calls")
    page = browser.page(pipe.counters_url)
    got = points = samples = None
    try:
        wait_for(lambda: browser.eval(page, "typeof bft === 'object' && 'counters' in bft"),
                 30, "the page's script")
        wait_for(lambda: browser.eval(page, f"bft.counters.last({key})") == want, 30,
                 f"the page to plot {want} calls")
        wait_for(lambda: browser.eval(page, "bft.counterRenders") > 0, 10, "a render")
        got = browser.eval(page, f"bft.counters.last({key})")
        samples = browser.eval(page, "bft.counters.samples")
        points = browser.eval(page, "(() => { const r = [...document.querySelectorAll("
                              "'#counters-table tr')].find((t) => t.dataset.counter === "
                              f"{key}); const p = r && r.querySelector('polyline'); "
                              "return p ? p.getAttribute('points').split(' ').length : 0; })()")
        # for a look by eye: the counters' section
        box = browser.eval(page, "(() => { const r = document.getElementById('counters')"
                           ".getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY,"
                           " r.width, r.height]; })()")
        shot = browser.call("Page.captureScreenshot", page, format="png",
                            clip={"x": box[0], "y": box[1], "width": box[2],
                                  "height": box[3], "scale": 1})
        with open(os.path.join(pipe.out, "counters.png"), "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    except Fail as e:
        tap.note(str(e))
    sampled = pipe.sampled()
    tap.result(got == want and sampled == want and (points or 0) >= 2,
               f"the inspector's page plots the sampled counters: {key} at {got} on the page, "
               f"{sampled} in its JSON, {want} calls made; {points} points drawn of "
               f"{samples} samples")


def calls_of(browser, session):
    return browser.eval(session, f"bft.appear({json.dumps(FN)}).length")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int,
                    default=int(os.environ.get("BFT_LIVE_VIEW_RUNS", "5")))
    ap.add_argument("--out")
    ap.add_argument("--json")
    ap.add_argument("--guest", metavar="KVER",
                    help="trace with the module in a test guest on kernel KVER")
    ap.add_argument("--data-udp", action="store_true",
                    help="the data over UDP (bfcollector --data-udp, bfhq --udp)")
    ap.add_argument("--agent", nargs=3, type=int,
                    metavar=("CTL_PORT", "HQ_PORT", "COUNTERS_PORT"),
                    help=argparse.SUPPRESS)     # --guest's side in the guest
    args = ap.parse_args()
    if args.agent:
        return agent_main(*args.agent, os.environ["BFT_EXPORT"], args.data_udp)
    if not args.out:
        args.out = os.path.join(BUILD, "live-view" + (f"-{args.guest}" if args.guest else "")
                                + ("-udp" if args.data_udp else ""))
    tap = Tap()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    chromium = os.environ.get("BFT_CHROMIUM", "chromium")
    if not shutil.which(chromium):
        tap.result(False, f"{chromium} is installed (scripts/setup-deps.sh installs it)")
        print(f"1..{tap.n}")
        return 1
    if not os.access(os.path.join(TOOLS, "bfhq"), os.X_OK):
        tap.result(False, "build/user/bfhq is built (make -C user)")
        print(f"1..{tap.n}")
        return 1
    # the page alone: once is enough, in the native run
    if not args.guest:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                check_edges(tap, chromium, args.out, tmp)
            except Fail as e:
                tap.result(False, f"the page's tree of every kind of line: {e}")
        if os.geteuid() != 0:
            tap.result(True, f"# SKIP the {BACKEND} backend needs root")
            print(f"1..{tap.n}")
            return 0
    for need in (os.path.join(TOOLS, "bfhq"), os.path.join(TARGETS, "calltree")):
        if not os.access(need, os.X_OK):
            tap.result(False, f"{os.path.relpath(need, ROOT)} is built "
                       "(make -C user; make -C selftests/bftrace)")
            print(f"1..{tap.n}")
            return 1

    agent = (GuestAgent(args.out, args.guest, args.data_udp) if args.guest
             else Agent(args.out, args.data_udp))
    pipe = Pipeline(args.out, agent, args.data_udp)
    tmp = tempfile.mkdtemp()
    browser = None
    delays = []
    to_sse = []                 # run start -> the page's handler got it
    stages = {name: [] for name, _ in STAGES}
    try:
        pipe.start()
        tap.note(f"bfhq serves {pipe.url}")
        pipe.run_target()
        browser = Browser(chromium, os.path.join(tmp, "profile"),
                          open(os.path.join(args.out, "chromium.log"), "wb"))
        page = browser.page(pipe.url + "?stamps#trace=1")
        wait_for(lambda: browser.eval(page, "typeof bft === 'object'"), 30,
                 "the page's script")
        try:
            wait_for(lambda: calls_of(browser, page) >= CT_NEST_REPS, 30,
                     "the first run's calls")
            good = calls_of(browser, page) == CT_NEST_REPS
        except Fail:
            good = False
        tap.result(good, "a page opened mid-trace shows the calls made before "
                   f"it was opened ({calls_of(browser, page)} of {CT_NEST_REPS} {FN})")

        shown = True
        for run in range(1, args.runs + 1):
            settle(browser, page, delays)
            t0 = pipe.run_target()
            want = (run + 1) * CT_NEST_REPS
            try:
                wait_for(lambda: calls_of(browser, page) >= want, 30,
                         f"run {run + 1}'s calls")
            except Fail:
                shown = False
                break
            k = want - CT_NEST_REPS
            first = browser.eval(page, f"bft.appear({json.dumps(FN)})[{k}]")
            delays.append(first - t0)
            call = browser.eval(page, f"bft.trail({json.dumps(FN)})[{k}]") or {}
            if call.get("got") is not None:
                to_sse.append(call["got"] - t0)
            stamp = read_stamps(os.path.join(pipe.hqout, "trace-1", "live",
                                             "stamps")).get(call.get("seq"))
            for name, ms in stages_of(t0, call, stamp).items():
                if ms is not None:
                    stages[name].append(ms)

        tap.result(shown and len(delays) == args.runs,
                   f"calls made after the page was opened appear on it ({len(delays)} "
                   f"of {args.runs} runs)")
        if delays:
            tap.note("delay from a run's start to its first call on the page: "
                     + ", ".join(f"{d:.0f}" for d in delays) + " ms; median "
                     f"{statistics.median(delays):.0f} ms (goal: at most 2 x the "
                     "flush interval, 200 ms at the defaults)")
        if to_sse:
            tap.note(f"to the page's SSE handler: median {statistics.median(to_sse):.0f} ms")
        for name, what in STAGES:
            if stages[name]:
                tap.note(f"stage {name}: median {statistics.median(stages[name]):.1f} ms, "
                         f"max {max(stages[name]):.1f} ({what})")
        if delays:
            tap.result(all(len(stages[name]) == len(delays) for name, _ in STAGES),
                       "each run's delay is split in stages (bfhq --live-stamps, the "
                       f"page's ?stamps): {min(len(v) for v in stages.values())} of "
                       f"{len(delays)} runs")

        check_counters(tap, browser, pipe, (len(delays) + 1) * CT_NEST_REPS)

        pipe.end_target()
        try:
            wait_for(lambda: browser.eval(page, "bft.model.ended"), 60,
                     "the page to see the trace end")
            ended = True
        except Fail:
            ended = False
        tap.result(ended, "the page sees the trace end")
        calls_path = os.path.join(pipe.hqout, "trace-1", "calls.txt")
        wait_for(lambda: os.path.exists(calls_path), 30, "calls.txt")
        with open(calls_path, encoding="utf-8", errors="surrogateescape") as f:
            want = f.read()
        got = browser.eval(page, "bft.callsTxt()")
        pre = browser.eval(page, "document.getElementById('calls-txt').textContent")
        with open(os.path.join(args.out, "page-calls.txt"), "w") as f:
            f.write(got or "")
        nthreads = want.count("\n")
        tap.result(got == want and pre == want and nthreads > 1,
                   f"the page's call tree equals calls.txt ({nthreads} threads, "
                   f"{want.count(' e')} calls)",
                   [] if got == want else [f"diff {calls_path} {args.out}/page-calls.txt"])

        late = browser.page(pipe.url + "#trace=1")
        try:
            wait_for(lambda: browser.eval(late, "typeof bft === 'object' && bft.model.ended"),
                     60, "the second page to read the finished trace")
            got2 = browser.eval(late, "bft.callsTxt()")
        except Fail as e:
            got2 = str(e)
        tap.result(got2 == want, "a second page on the finished trace shows the same tree")
        if args.data_udp:
            check_datagrams(tap, pipe)

        # The flame graph: its SVG, and a screenshot of exactly its box.
        # Its box scrolls at 30em on the page: unfold it for the picture.
        browser.eval(page, "document.getElementById('flame').style.maxHeight = 'none'")
        box = browser.eval(page, "(() => { const s = document.getElementById('flame-svg');"
                           " s.scrollIntoView(); const r = s.getBoundingClientRect();"
                           " return [r.x + scrollX, r.y + scrollY, r.width, r.height,"
                           " s.outerHTML]; })()")
        svg_path = os.path.join(args.out, "flame.svg")
        png_path = os.path.join(args.out, "flame.png")
        with open(svg_path, "w") as f:
            f.write(box[4])
        # A loaded machine may have no frame ready yet ("Unable to capture
        # screenshot"): bring the page forward, let it paint, ask again.
        shot = None
        for attempt in range(5):
            try:
                shot = browser.call("Page.captureScreenshot", page, timeout=60,
                                    format="png", captureBeyondViewport=True,
                                    clip={"x": box[0], "y": box[1], "width": box[2],
                                          "height": box[3], "scale": 1})
                break
            except Fail as e:
                if attempt == 4 or "Unable to capture" not in str(e):
                    raise
                print(f"# screenshot attempt {attempt + 1}: {e}; again", flush=True)
                try:
                    browser.call("Page.bringToFront", page)
                    browser.call("Runtime.evaluate", page, awaitPromise=True,
                                 expression="new Promise(r => requestAnimationFrame("
                                 "() => requestAnimationFrame(() => r(1))))")
                except Fail as again:   # the next capture says what it is
                    print(f"# {again}", flush=True)
                time.sleep(1 + attempt)
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        check = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                             "flame-render-check.py"),
                                "--start", str(tap.n + 1), "--frame", FN,
                                "--size", f"{int(box[2])}x{int(box[3])}",
                                svg_path, png_path],
                               stdout=subprocess.PIPE, text=True)
        for line in check.stdout.splitlines():
            print(line, flush=True)
            if line.startswith("ok ") or line.startswith("not ok "):
                tap.n += 1
                tap.failed += line.startswith("not ok ")
        tap.note(f"screenshot: {os.path.relpath(png_path, ROOT)}")
    except Fail as e:
        tap.result(False, f"the pipeline ran: {e}")
    finally:
        if browser:
            browser.close()
        why = pipe.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.guest:
        tap.result(why is None, f"the guest ({args.guest}) ends cleanly: the agent's "
                   "status, the module unloaded, a clean kernel log",
                   [why, f"its log: {os.path.relpath(args.out, ROOT)}/guest.log"] if why else [])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"delays_ms": delays,
                       "median_ms": statistics.median(delays) if delays else None,
                       "to_sse_ms": to_sse, "stages_ms": stages,
                       "flush_ms": 100}, f)
    print(f"1..{tap.n}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
