// SPDX-License-Identifier: GPL-2.0
// The page: the trace list, and one trace's Server-Sent Events feeding a
// BftModel drawn by a BftView.  window.bft is what tests look at.
"use strict";

const bft = {
  trace: null,
  model: new BftModel(),
  view: new BftView(),
  source: null,
  renders: 0,
  callsTxt() { return this.model.callsTxt(); },
  // Wall times (ms) at which the calls of the method named sig were first drawn.
  appear(sig) {
    for (const [id, s] of this.model.methods) if (s === sig) return this.model.appear.get(id) || [];
    return [];
  },
  // With stamps: the way of each call of the method named sig (model.js).
  trail(sig) {
    for (const [id, s] of this.model.methods) {
      if (s === sig) return (this.model.trail || []).filter((c) => c.method === id);
    }
    return [];
  },
};
window.bft = bft;

// Everything is drawn again only when lines or names came (model.changed);
// the frontier and meta.json, every flush, redraw the status alone.
let pending = false;
function schedule() {
  if (pending) return;
  pending = true;
  setTimeout(() => {
    pending = false;
    if (!bft.model.changed) {
      bft.view.light(bft.model, bft.trace);
      return;
    }
    bft.model.changed = false;
    bft.view.render(bft.model, bft.trace);
    bft.model.stamp();
    bft.renders++;
  }, 0);
}

// "/?stamps": each call's times are kept (a latency debug aid).
const stamps = new URLSearchParams(location.search).has("stamps");

function newModel() {
  const m = new BftModel();
  if (stamps) m.trail = [];
  return m;
}

function open(traceNo) {
  if (bft.source) bft.source.close();
  bft.trace = traceNo;
  bft.model = newModel();
  const es = new EventSource("/api/traces/" + traceNo + "/events" + (stamps ? "?stamps=1" : ""));
  bft.source = es;
  let got = false;
  // A reconnect starts over: the server sends everything again.
  es.addEventListener("open", () => {
    if (got) bft.model = newModel();
  });
  es.addEventListener("sent", (e) => bft.model.sent(Number(e.data)));
  es.addEventListener("meta", (e) => { got = true; bft.model.meta = JSON.parse(e.data); schedule(); });
  es.addEventListener("names", (e) => { got = true; bft.model.names(e.data); schedule(); });
  es.addEventListener("stream", (e) => { got = true; bft.model.stream(e.data); schedule(); });
  es.addEventListener("bad", (e) => { bft.model.badEntries = Number(e.data); schedule(); });
  es.addEventListener("frontier", (e) => {
    bft.model.frontier = Number(e.data);
    bft.model.newsAt = bftNow();
    schedule();
  });
  es.addEventListener("end", () => {
    bft.model.ended = true;
    bft.model.changed = true;
    es.close();
    schedule();
    listTraces();
  });
  schedule();
  listTraces();
}

async function listTraces() {
  let list;
  try {
    const r = await fetch("/api/traces");
    list = await r.json();
  } catch (err) {
    return;
  }
  const nav = document.getElementById("traces");
  nav.replaceChildren(...list.map((t) => {
    const st = t.meta ? t.meta.state : "unreadable";
    const a = el("a", { href: "#trace=" + t.trace, "data-state": st }, "trace " + t.trace + " (" + st + ")");
    if (t.trace === bft.trace) a.setAttribute("aria-current", "page");
    return a;
  }));
  if (bft.trace === null && list.length) {
    const running = list.filter((t) => t.meta && t.meta.state === "running");
    location.hash = "#trace=" + (running.length ? running[running.length - 1] : list[list.length - 1]).trace;
  }
}

function route() {
  const m = /^#trace=(\d+)$/.exec(location.hash);
  if (m && Number(m[1]) !== bft.trace) open(Number(m[1]));
}

window.addEventListener("hashchange", route);
route();
listTraces();
// The list of traces (not their data) is looked at again now and then,
// and the status says how long a running trace has been quiet.
setInterval(() => {
  listTraces();
  if (bft.trace !== null) bft.view.status(bft.model, bft.trace);
}, 2000);
