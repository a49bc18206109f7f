// The Health page: store and bus, recovery, push delivery, the nodes of a cluster; a new
// document arrives over the stream whenever one of them changes.

import { append, clear, h, timeCell } from "./dom.js";
import { follow } from "./net.js";

function flag(ok) {
  return h("span", { class: ok ? "ok" : "bad" }, ok ? "ready" : "unavailable");
}

export function healthPage({ main }) {
  const body = h("div", { id: "health" }, h("p", { class: "muted" }, "Waiting for the server…"));
  main.append(h("h1", {}, "Health"), body);
  const stream = follow("health/events", {}, {
    onEvent: (event) => { if (event.event === "health") show(event.data); },
    onError: (error, retrying) => {
      clear(body).append(h("p", { class: "error" }, retrying ? `Reconnecting… (${error.message})` : error.message));
    },
  });

  function show(doc) {
    const recovery = doc.recovery || {};
    const push = doc.push || {};
    append(clear(body), [
      h("div", { class: "grid" },
        h("section", { class: "panel", id: "store" }, h("h2", {}, "Store"),
          h("dl", { class: "facts" }, h("dt", {}, "kind"), h("dd", {}, doc.store.kind),
            h("dt", {}, "state"), h("dd", {}, flag(doc.store.ready)))),
        h("section", { class: "panel", id: "bus" }, h("h2", {}, "Bus"),
          h("dl", { class: "facts" }, h("dt", {}, "kind"), h("dd", {}, doc.bus.kind),
            h("dt", {}, "state"), h("dd", {}, flag(doc.bus.ready)))),
        h("section", { class: "panel", id: "recovery" }, h("h2", {}, "Recovery"),
          h("dl", { class: "facts" },
            h("dt", {}, "runs"), h("dd", {}, recovery.mode),
            h("dt", {}, "sweeps"), h("dd", {}, String(recovery.sweeps ?? 0)),
            h("dt", {}, "tasks it failed"), h("dd", {}, String(recovery.recovered ?? 0)),
            h("dt", {}, "unfinished now"), h("dd", {}, String(recovery.unfinished ?? 0)))),
        h("section", { class: "panel", id: "push" }, h("h2", {}, "Push delivery"),
          push.enabled
            ? h("dl", { class: "facts" },
              h("dt", {}, "outbox"), h("dd", { id: "outbox" }, `${push.outbox}${push.outboxAtLeast ? "+" : ""} webhook${push.outbox === 1 ? "" : "s"} behind`),
              h("dt", {}, "failing"), h("dd", { id: "failing-count" }, `${push.failing.length}${push.moreFailing ? "+" : ""}`))
            : h("p", { class: "muted" }, "Push notifications are off."))),
      push.enabled && push.failing.length
        ? h("section", { class: "panel" }, h("h2", {}, "Failing webhooks"),
          h("table", {}, h("thead", {}, h("tr", {}, ["task", "webhook", "failures", "last error"].map((t) => h("th", {}, t)))),
            h("tbody", {}, push.failing.map((f) => h("tr", {},
              h("td", {}, h("a", { class: "mono", href: `#/task/${encodeURIComponent(f.taskId)}` }, f.taskId)),
              h("td", { class: "mono" }, f.url),
              h("td", {}, String(f.failures)),
              h("td", { class: "error" }, f.lastError))))))
        : null,
      doc.nodes
        ? h("section", { class: "panel", id: "nodes" }, h("h2", {}, `Nodes (${doc.nodes.length})`),
          h("table", {}, h("thead", {}, h("tr", {}, ["node", "address", "since"].map((t) => h("th", {}, t)))),
            h("tbody", {}, doc.nodes.map((n) => h("tr", {},
              h("td", { class: "mono" }, n.node, n.this ? h("span", { class: "muted" }, " (this one)") : null),
              h("td", {}, n.address), h("td", {}, timeCell(n.since)))))))
        : null]);
  }

  return { stop: () => stream.close() };
}
