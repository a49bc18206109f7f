// The Activity page: the last hour of the server's own metrics (what /metrics exports,
// sampled every 10 s by the server) as small charts drawn here as inline SVG — requests,
// turns and tokens per second, p50/p99 latency per operation, the model's and the tools'
// latency. Live: each new sample adds a point.

import { append, clear, h } from "./dom.js";
import { follow } from "./net.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 320;
const HEIGHT = 90;
const MAX_OPERATIONS = 8; // the busiest operations of the hour get a latency chart each

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children) if (child) node.append(child);
  return node;
}

function rate(value) {
  if (value === null || value === undefined) return "–";
  if (value === 0) return "0";
  if (value >= 100) return value.toFixed(0);
  return value >= 1 ? value.toFixed(1) : value.toPrecision(2);
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return seconds >= 1 ? `${seconds.toFixed(2)} s` : `${(seconds * 1000).toPrecision(3)} ms`;
}

// One chart: a title, each series' latest value, and the lines over the window.
function chart({ id, title, series, format, start, end }) {
  const all = series.flatMap((s) => s.points.map(([, v]) => v)).filter((v) => v !== null);
  const top = Math.max(...all, 0) || 1;
  const x = (t) => ((t - start) / (end - start)) * WIDTH;
  const y = (v) => HEIGHT - 4 - (v / top) * (HEIGHT - 12);
  const drawing = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "spark", role: "img",
    "aria-label": `${title} over the last hour`,
  },
  svg("line", { x1: 0, y1: HEIGHT - 4, x2: WIDTH, y2: HEIGHT - 4, class: "axis" }),
  svg("text", { x: 2, y: 10, class: "tick" }, document.createTextNode(format(top))));
  series.forEach((s, n) => {
    // A gap (no value: nothing happened) breaks the line.
    let run = [];
    const flush = () => {
      if (run.length === 1) drawing.append(svg("circle", { cx: run[0][0], cy: run[0][1], r: 1.8, class: `s${n}` }));
      else if (run.length) drawing.append(svg("polyline", { points: run.map((p) => p.join(",")).join(" "), class: `s${n}` }));
      run = [];
    };
    for (const [t, v] of s.points) {
      if (v === null) flush();
      else run.push([x(t).toFixed(1), y(v).toFixed(1)]);
    }
    flush();
  });
  const latest = (s) => {
    const found = [...s.points].reverse().find(([, v]) => v !== null);
    return found ? format(found[1]) : "–";
  };
  return h("section", { class: "panel chart", "data-chart": id },
    h("h2", {}, title),
    h("div", { class: "legend" }, series.map((s, n) => h("span", { class: `key s${n}`, "data-series": s.name },
      `${s.name} `, h("strong", {}, latest(s))))),
    all.length ? drawing : h("p", { class: "muted empty" }, "nothing in the last hour"),
    h("div", { class: "axis-labels muted" }, h("span", {}, "−60 min"), h("span", {}, "now")));
}

export function activityPage({ main }) {
  const body = h("div", { id: "activity" }, h("p", { class: "muted" }, "Waiting for the server…"));
  main.append(h("h1", {}, "Activity"), body);
  let doc = null;

  const stream = follow("activity/events", {}, {
    onEvent: (event) => {
      if (event.event === "activity") doc = event.data;
      else if (event.event === "point" && doc) {
        doc.points = doc.points.filter((p) => !p.partial && p.at < event.data.at);
        doc.points.push(event.data);
      } else return;
      const since = Date.now() / 1000 - doc.windowS;
      doc.points = doc.points.filter((p) => p.at >= since);
      show();
    },
    onError: (error, retrying) => {
      clear(body).append(h("p", { class: retrying ? "muted" : "error" },
        retrying ? `Reconnecting… (${error.message})` : error.message));
    },
  });

  function show() {
    const points = doc.points;
    const end = Date.now() / 1000;
    const start = end - doc.windowS;
    const line = (name, pick) => ({ name, points: points.map((p) => [p.at, pick(p)]) });
    const timing = (name, pick) => [
      line("p50", (p) => pick(p)?.p50 ?? null),
      line("p99", (p) => pick(p)?.p99 ?? null),
    ];
    const busiest = new Map();
    for (const p of points) {
      for (const [op, t] of Object.entries(p.latency || {})) busiest.set(op, (busiest.get(op) || 0) + t.n);
    }
    const operations = [...busiest.entries()].sort((a, b) => b[1] - a[1]).slice(0, MAX_OPERATIONS).map(([op]) => op);
    const span = { start, end };
    const last = points[points.length - 1];
    body.dataset.last = last ? `${last.at}${last.partial ? " partial" : ""}` : "";
    append(clear(body), [
      doc.metrics ? null : h("p", { class: "notice" }, "Request metrics are off on this server (metrics = false): only the agent's numbers are shown."),
      h("p", { class: "muted" }, `The server's own metrics, one point every ${doc.intervalS} s over the last hour; rates per second, latencies p50 and p99.`),
      h("div", { class: "charts" },
        chart({ id: "requests", title: "Requests per second", format: rate, ...span,
          series: [line("requests", (p) => p.requests), line("errors", (p) => p.errors)] }),
        chart({ id: "turns", title: "Turns per second", format: rate, ...span,
          series: [line("turns", (p) => p.turns)] }),
        chart({ id: "tokens", title: "Tokens per second", format: rate, ...span,
          series: [line("in", (p) => p.tokensIn), line("out", (p) => p.tokensOut)] }),
        chart({ id: "model", title: "Model latency", format: duration, ...span, series: timing("model", (p) => p.model) }),
        chart({ id: "tool", title: "Tool latency", format: duration, ...span, series: timing("tool", (p) => p.tool) })),
      h("h2", { class: "section" }, "Latency per operation"),
      operations.length
        ? h("div", { class: "charts", id: "operations" }, operations.map((op) => chart({
          id: `op-${op}`, title: op, format: duration, ...span, series: timing(op, (p) => p.latency?.[op]),
        })))
        : h("p", { class: "muted" }, "No requests in the last hour."),
    ]);
  }

  return { stop: () => stream.close() };
}
