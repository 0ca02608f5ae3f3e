// SPDX-License-Identifier: GPL-2.0
// The counters an inspector (bfhq --counters --output/--http) records in
// counters.jsonl, plotted as they are sampled: /api/counters/events sends
// its JSON lines (bfhq.1, --json), every one so far and then each new one.
// Without a record (404) the section stays hidden.
"use strict";

const COUNTERS_KEEP = 600;      // points per counter: a minute at 10 Hz
const COUNTERS_PLOTTED = 40;    // the rest are counted, not drawn

class BftCounters {
  constructor() {
    this.series = new Map();    // "Category:name" -> { unit, points: [[t, v]] }
    this.samples = 0;
    this.lastTime = null;
    this.agents = 0;
  }

  // One JSON line of the record.
  line(text) {
    let j;
    try { j = JSON.parse(text); } catch (err) { return; }
    const headers = j.event === "hello" ? j.counters : j.event === "add" && j.counter ? [j.counter] : [];
    if (j.event === "hello") {
      // a new agent: its indexes and values start over
      this.series = new Map();
      this.agents++;
    }
    for (const h of headers) this.serie(h.category + ":" + h.name).unit = h.unit;
    if (j.event !== "sample") return;
    this.samples++;
    this.lastTime = j.time;
    for (const [k, v] of Object.entries(j.values || {})) {
      const s = this.serie(k);
      s.points.push([j.time, v]);
      if (s.points.length > COUNTERS_KEEP) s.points.splice(0, s.points.length - COUNTERS_KEEP);
    }
  }

  serie(key) {
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { unit: "", points: [] }));
    return s;
  }

  last(key) {
    const s = this.series.get(key);
    return s && s.points.length ? s.points[s.points.length - 1][1] : undefined;
  }
}

// A line of the points, scaled into w x h (time across, value up).
function sparkline(points, w, h) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  if (!points.length) return svg;
  const t0 = points[0][0], t1 = points[points.length - 1][0];
  let lo = Infinity, hi = -Infinity;
  for (const [, v] of points) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  const x = (t) => (t1 > t0 ? (t - t0) / (t1 - t0) * (w - 2) : w - 2) + 1;
  const y = (v) => (hi > lo ? h - 1 - (v - lo) / (hi - lo) * (h - 2) : h / 2);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points.map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1)).join(" "));
  svg.appendChild(line);
  return svg;
}

function fmtValue(v) {
  return Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(2);
}

function renderCounters(c) {
  const sec = document.getElementById("counters");
  sec.hidden = false;
  const keys = [...c.series.keys()].filter((k) => c.series.get(k).points.length).sort();
  const when = c.lastTime === null ? "no sample yet" :
    "the last at " + new Date(c.lastTime * 1000).toISOString().slice(11, 23) + " UTC";
  document.getElementById("counters-status").textContent =
    `${c.samples} samples, ${when}` +
    (keys.length > COUNTERS_PLOTTED ? `; ${keys.length - COUNTERS_PLOTTED} more counters sampled, not plotted` : "");
  const rows = keys.slice(0, COUNTERS_PLOTTED).map((k) => {
    const s = c.series.get(k);
    const tr = document.createElement("tr");
    tr.dataset.counter = k;
    const name = document.createElement("td");
    name.textContent = k;
    const val = document.createElement("td");
    val.textContent = fmtValue(c.last(k)) + (s.unit && s.unit !== "raw" ? " " + s.unit : "");
    const plot = document.createElement("td");
    plot.appendChild(sparkline(s.points, 240, 28));
    tr.append(name, val, plot);
    return tr;
  });
  document.getElementById("counters-table").replaceChildren(...rows);
}

(function watchCounters() {
  const c = new BftCounters();
  window.bft.counters = c;
  window.bft.counterRenders = 0;
  const es = new EventSource("/api/counters/events");
  let pending = false;
  // a reconnect is sent the whole record again
  es.addEventListener("open", () => Object.assign(c, new BftCounters()));
  es.addEventListener("counters", (e) => {
    c.line(e.data);
    if (pending) return;
    pending = true;
    setTimeout(() => {
      pending = false;
      renderCounters(c);
      window.bft.counterRenders++;
    }, 0);
  });
  // 404: nothing records counters under this bfhq's directory
  es.addEventListener("error", () => {
    if (es.readyState === EventSource.CLOSED) window.bft.countersClosed = true;
  });
})();
