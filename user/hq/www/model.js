// SPDX-License-Identifier: GPL-2.0
// The page's model of one trace, built from the lines of the live files
// (docs/live-format.md) exactly as bfhq's route (route*.c) builds its
// outputs, so that callsTxt() is calls.txt once the trace has ended.
"use strict";

const BFT_RECENT_MARKS = 200;    // the markers the page lists, newest kept

function bftUnescape(s) {
  return s.replace(/\\(\\|0|x[0-9a-fA-F]{2})/g, (m, e) =>
    e === "\\" ? "\\" : e === "0" ? "\0" : String.fromCharCode(parseInt(e.slice(1), 16)));
}

// Sequence numbers wrap at 2^32: compared as serial numbers.
function bftSeqBefore(a, b) {
  return ((a - b) | 0) < 0;
}

function bftNow() {
  return performance.timeOrigin + performance.now(); // wall clock, ms
}

class BftModel {
  constructor() {
    this.meta = null;
    this.frontier = 0;
    this.newsAt = bftNow();       // when the frontier last moved
    this.ended = false;
    this.methods = new Map();     // id -> signature
    this.shown = new Map();       // id -> display form, where it differs
    this.exceptions = new Map();  // id -> name
    this.threads = new Map();     // id -> thread
    this.stats = new Map();       // method id -> {calls, totalUs, selfUs}
    this.voids = [];              // {cause, first, count, time, seq}
    this.agentLost = 0;           // bftrace.lost markers
    this.markers = 0;
    this.recentMarks = [];        // the newest markers shown, {time, thread, key, value}
    this.marksShown = 0;          // markers not bftrace's own: all of them, listed or not
    this.at = null;               // {seq, thread} of the last bftrace.at line
    this.events = 0;
    this.bad = 0;                 // lines that did not parse (counted, skipped)
    this.badEntries = 0;          // index entries the server could not use
    this.unstamped = [];          // nodes and calls waiting for the next render
    this.appear = new Map();      // method id -> [wall ms of each call's first render]
    // With stamps (page.html?stamps): each call's way here, for the latency
    // breakdown of scripts/live-view-test.py: {method, seq, got, sent, drawn}.
    this.trail = null;
    this.unsent = [];             // trail entries before the next "sent"
    this.undrawn = [];            // trail entries before the next render
    this.changed = true;
  }

  thread(id) {
    let th = this.threads.get(id);
    if (!th) {
      // canonSeq: the sequence number of each canon token; marks: the
      // thread's markers ({seq, tok}), which come in another stream and
      // are put among the tokens by number (route.c's bftrace.at)
      th = { id, name: null, stack: [], canon: [], canonSeq: [], marks: [], calls: 0, lastTime: 0,
             root: { method: null, children: new Map(), calls: 0, totalUs: 0, selfUs: 0, born: 0 } };
      this.threads.set(id, th);
    }
    return th;
  }

  threadName(th) {
    return th.name !== null ? th.name : "thread " + th.id;
  }

  // The method's whole signature, "#id" if it has none.
  methodName(id) {
    const s = this.methods.get(id);
    return s !== undefined ? s : "#" + id;
  }

  // What the page prints for it: the display form bfhq sent ("S" lines),
  // or the signature where it sent none (the same, or --full-names).
  methodShown(id) {
    const s = this.shown.get(id);
    return s !== undefined ? s : this.methodName(id);
  }

  stat(id) {
    let s = this.stats.get(id);
    if (!s) {
      s = { calls: 0, totalUs: 0, selfUs: 0 };
      this.stats.set(id, s);
    }
    return s;
  }

  names(text) {
    for (const line of text.split("\n")) {
      const m = /^([MSTX]) (\d+) (.*)$/s.exec(line);
      if (!m) {
        if (line) this.bad++;
        continue;
      }
      const id = Number(m[2]), name = bftUnescape(m[3]);
      // an S line follows its M line: a rename without one has none
      if (m[1] === "M") {
        this.methods.set(id, name);
        this.shown.delete(id);
      } else if (m[1] === "S") this.shown.set(id, name);
      else if (m[1] === "X") this.exceptions.set(id, name);
      else this.thread(id).name = name;
    }
    this.changed = true;
  }

  // One "stream" event: the stream's id, then its lines.
  stream(text) {
    const lines = text.split("\n");
    const sid = lines.shift();
    if (sid === "markers") {
      for (const line of lines) this.marker(line);
    } else {
      const th = this.thread(Number(sid));
      for (const line of lines) this.event(th, line);
    }
    this.changed = true;
  }

  marker(line) {
    const m = /^m (\d+) (\d+) ([^\t]*)\t(.*)$/s.exec(line);
    if (!m) {
      if (line) this.bad++;
      return;
    }
    const seq = Number(m[1]), at = this.at;
    const key = bftUnescape(m[3]), value = bftUnescape(m[4]);
    this.at = null;
    // bfcollector's: the thread of the marker numbered right after it
    if (key === "bftrace.at") {
      if (/^[0-9]+$/.test(value) && Number(value) <= 65535) this.at = { seq, thread: Number(value) };
      return;
    }
    this.markers++;
    const placed = at && seq === (at.seq + 1) >>> 0;
    // calls.txt's token: no space, and no colon to end the thread's name
    if (placed)
      this.thread(at.thread).marks.push({ seq, tok: " m" + m[3].replace(/ /g, "\\x20").replace(/:/g, "\\x3a") });
    if (key === "bftrace.lost") this.agentLost += parseInt(value, 10) || 0;
    // bfcollector's own markers say how the trace went, not what ran
    if (!key.startsWith("bftrace.")) {
      this.marksShown++;
      this.recentMarks.push({ time: Number(m[2]), thread: placed ? this.thread(at.thread) : null, key, value });
      if (this.recentMarks.length > BFT_RECENT_MARKS) this.recentMarks.shift();
    }
  }

  event(th, line) {
    const f = line.split(" ");
    const time = Number(f[2]), method = Number(f[3]);
    if (f.length < 4 || !Number.isFinite(time) || (f[0] !== "|" && !Number.isFinite(method))) {
      if (line) this.bad++;
      return;
    }
    this.events++;
    if (f[0] !== "|") th.lastTime = time;
    const tokens = th.canon.length;
    this.eventOp(th, f, time, method);
    for (let k = tokens; k < th.canon.length; k++) th.canonSeq.push(Number(f[1]));
  }

  eventOp(th, f, time, method) {
    switch (f[0]) {
      case "e":
        this.enter(th, method, time);
        if (this.trail) this.track(method, Number(f[1]));
        break;
      case "n": this.instant(th, method); break;
      case "x": case "t": this.exit(th, method, time, "x"); break;
      case "u": this.exit(th, method, time, "u"); break;
      case "!": th.canon.push(" !" + f[4]); break;
      case "|":
        th.canon.push(" |");
        while (th.stack.length) this.leave(th, th.lastTime);
        this.voids.push({ thread: th.id, cause: f[3], first: Number(f[4]), count: Number(f[5]),
                          time, seq: Number(f[1]) });
        break;
      default: this.bad++; this.events--;
    }
  }

  enter(th, method, time) {
    th.canon.push(" e" + method);
    const parent = th.stack.length ? th.stack[th.stack.length - 1].node : th.root;
    let node = parent.children.get(method);
    if (!node) {
      node = { method, children: new Map(), calls: 0, totalUs: 0, selfUs: 0, born: 0 };
      parent.children.set(method, node);
      this.unstamped.push(node);
    }
    node.calls++;
    th.calls++;
    this.stat(method).calls++;
    th.stack.push({ method, enter: time, childUs: 0, node });
    this.unstamped.push(method);
  }

  // An entry of a method traced without its exits (route_noret.c's
  // noret_enter()): counted, never a frame, or the stack would grow for ever.
  instant(th, method) {
    th.canon.push(" n" + method);
    th.calls++;
    const s = this.stat(method);
    s.calls++;
    s.noret = true;     // no durations to show: top() says so
  }

  // route_tree.c's frame_exit(): the frame it names, and any above it, are
  // left.
  exit(th, method, time, tok) {
    if (!th.stack.length) {
      th.canon.push(" " + tok + "?");
      return;
    }
    let k = th.stack.length - 1;
    while (k >= 0 && th.stack[k].method !== method) k--;
    if (k < 0) {
      th.canon.push(" " + tok + "!");
      return;
    }
    while (th.stack.length > k + 1) this.leave(th, time);
    th.canon.push(" " + tok + method);
    this.leave(th, time);
  }

  leave(th, time) {
    const f = th.stack.pop();
    const dur = time >= f.enter ? time - f.enter : 0;
    const self = dur >= f.childUs ? dur - f.childUs : 0;
    if (th.stack.length) th.stack[th.stack.length - 1].childUs += dur;
    f.node.totalUs += dur;
    f.node.selfUs += self;
    const s = this.stat(f.method);
    s.totalUs += dur;
    s.selfUs += self;
  }

  track(method, seq) {
    const c = { method, seq, got: bftNow(), sent: null, drawn: null };
    this.trail.push(c);
    this.unsent.push(c);
    this.undrawn.push(c);
  }

  // A "sent" event: when the server queued the stream events before it (us).
  sent(us) {
    for (const c of this.unsent) c.sent = us / 1000;
    this.unsent = [];
  }

  // After a render: what it showed for the first time gets its time.
  stamp() {
    const now = bftNow();
    for (const c of this.undrawn) c.drawn = now;
    this.undrawn = [];
    for (const x of this.unstamped) {
      if (typeof x === "number") {
        let a = this.appear.get(x);
        if (!a) this.appear.set(x, (a = []));
        if (a.length < 100000) a.push(now);
      } else {
        x.born = now;
      }
    }
    this.unstamped = [];
  }

  // Threads as calls.txt orders them: by name (bytes), then id.
  sortedThreads() {
    const enc = new TextEncoder();
    const key = (th) => enc.encode(this.threadName(th));
    return [...this.threads.values()].map((th) => [key(th), th]).sort((a, b) => {
      const x = a[0], y = b[0];
      for (let i = 0; i < x.length && i < y.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
      return x.length - y.length || a[1].id - b[1].id;
    }).map((p) => p[1]);
  }

  // A thread's calls.txt tokens, its markers among them by number (a
  // void's token, numbered as the message after it, comes first).
  canonText(th) {
    if (!th.marks.length) return th.canon.join("");
    const out = [];
    let k = 0;
    for (let i = 0; i < th.canon.length; i++) {
      while (k < th.marks.length && bftSeqBefore(th.marks[k].seq, th.canonSeq[i])) out.push(th.marks[k++].tok);
      out.push(th.canon[i]);
    }
    while (k < th.marks.length) out.push(th.marks[k++].tok);
    return out.join("");
  }

  callsTxt() {
    return this.sortedThreads().map((th) => this.threadName(th) + ":" + this.canonText(th) + "\n").join("");
  }
}
