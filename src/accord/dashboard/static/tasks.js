// The Tasks page: a table of the tenant's tasks, newest status first, narrowed by state,
// context and text, paged with the server's tokens, and kept current by the change stream.

import { clear, h, participantChips, shortId, stateBadge, timeCell } from "./dom.js";
import { follow, getJson } from "./net.js";

const STATES = ["submitted", "working", "input-required", "auth-required", "completed",
  "failed", "canceled", "rejected"];
const PAGE_SIZE = 50;
const GROWTH = PAGE_SIZE; // live rows added to the first page before they are only counted

export function tasksPage({ main, params }) {
  const filters = {
    state: params.get("state") || "",
    context: params.get("context") || "",
    q: params.get("q") || "",
  };
  let tokens = [""]; // the page tokens that led here: tokens[i] opens page i
  let page = null; // the shown page's answer
  let rows = new Map(); // task id -> <tr>
  let stream = null;
  let unseen = 0; // changes not inserted into the table
  let typing = null;

  const stateSelect = h("select", { name: "state", onchange: changed },
    h("option", { value: "" }, "any state"),
    STATES.map((s) => h("option", { value: s, selected: s === filters.state }, s)));
  const contextInput = h("input", { name: "context", placeholder: "context id", value: filters.context, onchange: changed });
  const textInput = h("input", {
    name: "q", placeholder: "search: id, name, participant, text", value: filters.q,
    oninput: () => { clearTimeout(typing); typing = setTimeout(changed, 350); },
  });
  const notice = h("div", {});
  const body = h("tbody", {});
  const pager = h("div", { class: "pager" });
  main.append(
    h("h1", {}, "Tasks"),
    h("section", { class: "panel" },
      h("div", { class: "filters" }, stateSelect, contextInput, textInput,
        h("button", { onclick: () => { stateSelect.value = ""; contextInput.value = ""; textInput.value = ""; changed(); } }, "Clear")),
      notice,
      h("table", { id: "tasks" },
        h("thead", {}, h("tr", {},
          ["Task", "State", "Context", "Participants", "Last update", "Status message"].map((t) => h("th", {}, t)))),
        body),
      pager));

  function changed() {
    filters.state = stateSelect.value;
    filters.context = contextInput.value.trim();
    filters.q = textInput.value.trim();
    const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    history.replaceState(null, "", `#/tasks${query.toString() ? `?${query}` : ""}`);
    restart();
  }

  // The stream first: its "ready" event marks where it starts, so the first page read after
  // it misses no change.
  function restart() {
    if (stream) stream.close();
    tokens = [""];
    let first = true;
    stream = follow("tasks/changes", filters, {
      onEvent: (event) => {
        if (event.event === "ready" && first) {
          first = false;
          load(0);
        } else if (event.event === "row") live(event.data);
        else if (event.event === "gone") drop(event.data.id);
      },
      onError: (error, retrying) => showProblem(error, retrying),
    });
  }

  async function load(index) {
    try {
      page = await getJson("tasks", { ...filters, page: tokens[index], size: PAGE_SIZE });
    } catch (error) {
      showProblem(error, false);
      return;
    }
    tokens = tokens.slice(0, index + 1);
    if (page.next) tokens.push(page.next);
    unseen = 0;
    clear(notice);
    clear(body);
    rows = new Map();
    for (const row of page.rows) body.append(renderRow(row, false));
    if (!page.rows.length) {
      body.append(h("tr", {}, h("td", { colspan: 6, class: "muted" },
        page.exhausted ? "No tasks." : "No match yet in the tasks searched.")));
    }
    showPager(index);
  }

  function showPager(index) {
    const first = index * PAGE_SIZE + 1;
    const shown = page.rows.length;
    let count;
    if (page.total !== null && page.total !== undefined) {
      count = shown ? `${first}–${first + shown - 1} of ${page.total.toLocaleString()}` : `0 of ${page.total.toLocaleString()}`;
    } else {
      count = `${shown} found in ${page.scanned.toLocaleString()} tasks searched`;
    }
    clear(pager).append(
      h("button", { disabled: index === 0, onclick: () => load(index - 1) }, "← Newer"),
      h("span", { class: "muted", id: "count" }, count),
      h("button", { disabled: !page.next, onclick: () => load(index + 1) },
        page.exhausted ? "Older →" : "Search further →"));
    pager.dataset.page = String(index);
  }

  function renderRow(row, fresh) {
    const tr = h("tr", { "data-task-id": row.id, class: fresh ? "fresh" : null },
      h("td", {}, h("a", { href: `#/task/${encodeURIComponent(row.id)}`, title: row.id }, row.name || shortId(row.id)),
        row.name ? h("div", { class: "muted mono" }, shortId(row.id)) : null),
      h("td", {}, stateBadge(row.state, row.subState)),
      h("td", {}, h("a", { class: "mono", href: `#/tasks?context=${encodeURIComponent(row.contextId)}`, title: row.contextId }, shortId(row.contextId))),
      h("td", {}, participantChips(row.participants)),
      h("td", {}, timeCell(row.updated)),
      h("td", { class: "summary", title: row.summary }, row.summary));
    tr.dataset.updated = String(row.updatedMs);
    rows.set(row.id, tr);
    return tr;
  }

  function live(row) {
    if (!page) return;
    const existing = rows.get(row.id);
    const onFirst = tokens.length === 1 || pager.dataset.page === "0";
    if (existing && !onFirst) {
      existing.replaceWith(renderRow(row, true)); // shown here: updated in place
      return;
    }
    if (!onFirst || (!existing && body.children.length >= PAGE_SIZE + GROWTH)) {
      unseen += 1;
      clear(notice).append(h("div", { class: "notice" },
        `${unseen} newer change${unseen === 1 ? "" : "s"} not shown`,
        h("button", { onclick: () => load(0) }, "Show newest")));
      return;
    }
    if (existing) existing.remove();
    const empty = body.querySelector("td[colspan]");
    if (empty) empty.parentElement.remove();
    const tr = renderRow(row, true);
    // Newest first: before the first row that changed earlier.
    const later = [...body.children].find((other) => Number(other.dataset.updated) <= row.updatedMs);
    body.insertBefore(tr, later || null);
  }

  function drop(id) {
    const existing = rows.get(id);
    if (existing) {
      existing.remove();
      rows.delete(id);
    }
  }

  function showProblem(error, retrying) {
    clear(notice).append(h("div", { class: "notice error" },
      retrying ? `Live updates interrupted (${error.message}); reconnecting…` : error.message));
  }

  restart();
  return { stop: () => { if (stream) stream.close(); clearTimeout(typing); } };
}
