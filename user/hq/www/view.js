// SPDX-License-Identifier: GPL-2.0
// Drawing a BftModel: status, call trees, flame graph, top methods, losses.
"use strict";

const BFT_SVG = "http://www.w3.org/2000/svg";
const BFT_MAX_CHILDREN = 200;   // per tree node shown; the rest are summed up

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

// A flame box's label: the display form without its object, as bfhq's
// flame.svg has it.
function noObject(name) {
  const bang = name.indexOf("!");
  return bang >= 0 ? name.slice(bang + 1) : name;
}

function fmtUs(us) {
  if (us >= 1e6) return (us / 1e6).toFixed(3) + " s";
  if (us >= 1e3) return (us / 1e3).toFixed(3) + " ms";
  return us + " µs";
}

function byTime(a, b) {
  return b.totalUs - a.totalUs || b.calls - a.calls || a.method - b.method;
}

class BftView {
  constructor() {
    this.open = new Set(); // tree nodes the user opened ("thread/m/m...")
    this.closed = new Set(); // and those the user closed
  }

  render(model, traceNo) {
    this.status(model, traceNo);
    this.trees(model);
    this.flame(model);
    this.top(model);
    this.losses(model);
    this.marks(model);
    document.getElementById("calls-txt").textContent = model.ended ? model.callsTxt() : "";
  }

  // What meta.json and the frontier change: cheap, unlike the trees and
  // the flame graph, which under a slow CPU (TCG) take a second to redraw.
  light(model, traceNo) {
    this.status(model, traceNo);
    this.losses(model);
  }

  // The newest markers (USDT probe hits and the agent's): when, whose,
  // what; a marker of no thread is the trace's.
  marks(model) {
    const rows = model.recentMarks.slice().reverse().map((k) => el("tr", {},
      el("td", {}, fmtUs(k.time)),
      el("td", {}, k.thread ? model.threadName(k.thread) : "—"),
      el("td", {}, k.key), el("td", {}, k.value)));
    const head = el("tr", {}, el("th", {}, "time"), el("th", {}, "thread"),
                    el("th", {}, "marker"), el("th", {}, "value"));
    document.getElementById("markers").replaceChildren(head, ...rows);
    document.getElementById("markers-count").textContent =
      model.marksShown ? "(" + model.marksShown + ", the newest " + rows.length + " listed)" : "(none)";
  }

  status(model, traceNo) {
    const m = model.meta || {};
    const st = m.state || "waiting";
    // Every flush moves the frontier while bfhq records; a running trace
    // that stays put this long is idle, or its bfhq is gone.
    const quiet = (bftNow() - model.newsAt) / 1000;
    const stale = st === "running" && !model.ended && quiet > 5 * (m.flush_ms || 100) / 1000;
    const parts = [
      el("strong", {}, "trace " + traceNo),
      " " + st + (m.message ? " (" + m.message + ")" : ""),
      ", shown up to " + (model.ended ? "the end" : fmtUs(model.frontier)),
      ", " + model.events + " events, " + model.threads.size + " threads, " +
        model.methods.size + " methods",
      m.resolution_us ? ", times to " + m.resolution_us + " µs" : "",
      model.bad ? ", " + model.bad + " lines not understood" : "",
      model.badEntries ? ", " + model.badEntries + " index entries unusable" : "",
      stale ? ", nothing new for " + quiet.toFixed(0) + " s (idle, or its bfhq is gone)" : "",
    ];
    const p = el("p", { id: "state", "data-state": model.ended ? "ended" : st }, ...parts);
    document.getElementById("status").replaceChildren(p);
  }

  node(model, n, key, depth) {
    const label = model.methodShown(n.method) + "  ×" + n.calls + "  " + fmtUs(n.totalUs);
    const title = { title: model.methodName(n.method) };
    if (!n.children.size) return el("li", title, label);
    const open = this.open.has(key) || (depth < 3 && !this.closed.has(key));
    const d = el("details", open ? { open: "" } : {}, el("summary", title, label));
    d.addEventListener("toggle", () => {
      (d.open ? this.open : this.closed).add(key);
      (d.open ? this.closed : this.open).delete(key);
    });
    if (open) d.append(this.children(model, n, key, depth + 1));
    else d.addEventListener("toggle", () => d.append(this.children(model, n, key, depth + 1)), { once: true });
    return el("li", {}, d);
  }

  children(model, n, key, depth) {
    const ul = el("ul");
    const kids = [...n.children.values()].sort(byTime);
    for (const c of kids.slice(0, BFT_MAX_CHILDREN)) ul.append(this.node(model, c, key + "/" + c.method, depth));
    if (kids.length > BFT_MAX_CHILDREN) ul.append(el("li", {}, "… " + (kids.length - BFT_MAX_CHILDREN) + " more"));
    return ul;
  }

  trees(model) {
    const box = el("div");
    for (const th of model.sortedThreads()) {
      const key = "t" + th.id;
      const sum = model.threadName(th) + " — " + th.calls + " calls" +
        (th.stack.length ? ", " + th.stack.length + " open" : "");
      const open = !this.closed.has(key);
      const d = el("details", open ? { open: "", class: "thread" } : { class: "thread" }, el("summary", {}, sum));
      d.addEventListener("toggle", () => (d.open ? this.closed.delete(key) : this.closed.add(key)));
      d.append(this.children(model, th.root, key, 0));
      box.append(d);
    }
    document.getElementById("threads").replaceChildren(box);
  }

  // An icicle: every thread is a frame on the top row, its calls below;
  // a call's width is its time, or its count where the trace measured no
  // time at all.
  flame(model) {
    const W = 1000, H = 17;
    const roots = [...model.threads.values()].filter((th) => th.root.children.size);
    let byCalls = true;
    for (const th of roots) for (const c of th.root.children.values()) if (c.totalUs > 0) byCalls = false;
    const weight = (n) => byCalls ? n.calls : n.totalUs;
    const tw = (th) => [...th.root.children.values()].reduce((s, c) => s + weight(c), 0);
    const total = roots.reduce((s, th) => s + tw(th), 0);
    let depth = 0;
    const rows = [];
    const place = (name, title, w, x, d, key) => {
      if (w * W / total < 0.5) return;
      rows.push({ name, title, x: x * W / total, w: w * W / total, d, key });
      depth = Math.max(depth, d + 1);
    };
    let x = 0;
    for (const th of roots) {
      const w = tw(th);
      place(model.threadName(th), model.threadName(th), w, x, 0, "thread");
      const walk = (n, x0, d) => {
        for (const c of [...n.children.values()].sort(byTime)) {
          const cw = weight(c);
          place(noObject(model.methodShown(c.method)), model.methodName(c.method) + " (" + c.calls + " calls, " +
                fmtUs(c.totalUs) + ")", cw, x0, d, c.method);
          if (d < 200) walk(c, x0, d + 1);
          x0 += cw;
        }
      };
      walk(th.root, x, 1);
      x += w;
    }
    const svg = document.createElementNS(BFT_SVG, "svg");
    svg.setAttribute("id", "flame-svg");
    svg.setAttribute("xmlns", BFT_SVG);
    svg.setAttribute("width", W);
    svg.setAttribute("height", Math.max(1, depth) * H);
    svg.setAttribute("viewBox", "0 0 " + W + " " + Math.max(1, depth) * H);
    for (const r of rows) {
      const g = document.createElementNS(BFT_SVG, "g");
      const t = document.createElementNS(BFT_SVG, "title");
      t.textContent = r.title;
      const rect = document.createElementNS(BFT_SVG, "rect");
      const y = r.d * H;
      rect.setAttribute("x", r.x.toFixed(2));
      rect.setAttribute("y", y);
      rect.setAttribute("width", r.w.toFixed(2));
      rect.setAttribute("height", H - 1);
      rect.setAttribute("fill", this.color(r.key === "thread" ? -1 : r.key));
      g.append(t, rect);
      if (r.w > 40) {
        const tx = document.createElementNS(BFT_SVG, "text");
        tx.setAttribute("x", (r.x + 3).toFixed(2));
        tx.setAttribute("y", y + H - 5);
        tx.textContent = r.name.length * 7 > r.w - 6 ? r.name.slice(0, Math.max(0, Math.floor((r.w - 6) / 7) - 1)) + "…" : r.name;
        g.append(tx);
      }
      svg.append(g);
    }
    document.getElementById("flame").replaceChildren(svg);
  }

  // Warm colours, one per method, every one with a dark channel so that it
  // stands out from the page.
  color(id) {
    if (id < 0) return "rgb(120,120,200)";
    let h = (id * 2654435761) >>> 0;
    const r = 205 + (h % 50); h = Math.floor(h / 50);
    const g = 60 + (h % 140); h = Math.floor(h / 140);
    const b = h % 60;
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  top(model) {
    const t = document.getElementById("top");
    const rows = [...model.stats.entries()].filter(([, s]) => s.calls)
      .sort((a, b) => b[1].selfUs - a[1].selfUs || b[1].calls - a[1].calls || a[0] - b[0]).slice(0, 20);
    t.replaceChildren(el("tr", {}, el("th", {}, "self"), el("th", {}, "total"), el("th", {}, "calls"), el("th", {}, "method")),
      ...rows.map(([id, s]) => el("tr", {}, el("td", {}, s.noret ? "—" : fmtUs(s.selfUs)),
                                  el("td", {}, s.noret ? "—" : fmtUs(s.totalUs)),
                                  el("td", {}, String(s.calls)),
                                  el("td", { title: model.methodName(id) },
                                     model.methodShown(id) + (s.noret ? "  (entries only)" : "")))));
  }

  losses(model) {
    const c = (model.meta && model.meta.counters) || {};
    const n = (k) => c[k] || 0;
    const lines = [
      "events lost by the agent: " + model.agentLost,
      "gaps (given up after the gap timeout): " + n("gaps") + ", " + n("gap_missing") + " sequence numbers",
      "lost at the reorder bound: " + n("lost") + ", " + n("lost_missing") + " sequence numbers",
      "late (dropped): " + n("late"),
      "data breaks: " + n("breaks") + (n("breaks_late") ? ", " + n("breaks_late") + " late" : ""),
    ];
    // only a trace whose data came in datagrams (bfcollector --data-udp)
    if (n("udp_datagrams") || n("udp_malformed"))
      lines.push("datagrams: " + n("udp_datagrams") + " received, " + n("udp_lost") + " lost, " +
        n("udp_duplicated") + " duplicated, " + n("udp_late") + " late, " + n("udp_malformed") + " malformed");
    const ul = el("ul", { id: "loss-list" }, ...lines.map((l) => el("li", {}, l)));
    const seen = new Set();
    for (const v of model.voids) {
      const k = v.seq + v.cause;
      if (seen.has(k) || seen.size >= 50) continue;
      seen.add(k);
      ul.append(el("li", { class: "void" }, "stacks cut at " + fmtUs(v.time) + ": " + v.cause +
        (v.cause === "break" ? "" : " of " + v.count + " from sequence " + v.first)));
    }
    document.getElementById("losses").replaceChildren(ul);
  }
}
