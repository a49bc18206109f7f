// A task's page: its timeline as it happens (from its log, resumed with Last-Event-ID after
// a break), participants and roles, plan and sub-tasks, push configs with their delivery,
// and for a conversation a compose box (messages, the card's /commands, complete, cancel).

import { a2uiPanel, isA2ui, summary } from "./a2ui.js";
import { clear, h, shortId, stateBadge, timeCell } from "./dom.js";
import { a2a, follow, getJson, session } from "./net.js";
import {
  COMMANDS_URI, EVENT_TYPE, addressees, harnessOf, isHelpRequest, renderPart, renderParts,
  senderOf, stateName, subStateOf,
} from "./parts.js";
import { snapshotChanges, textOf } from "./snapshots.js";
import { stepsView } from "./steps.js";
import { contractPanel } from "./contract.js";
import { invitePanel } from "./invite.js";
import { attachments } from "./upload.js";

const TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);

function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function taskPage({ main, card, who }, taskId) {
  let snapshot = null;
  let stream = null;
  let pushTimer = null;
  const artifacts = new Map(); // artifact id -> { item, body, lastText, text }
  const shownMessages = new Set(); // ids of the messages the timeline shows
  let known = null; // the task as the timeline's events so far make it
  const me = who.authenticated ? who.identity : session.load().participant || "";

  const header = h("div", {});
  const timeline = h("ol", { class: "timeline", id: "timeline" });
  const people = h("div", {});
  const plan = h("div", {});
  const pushes = h("div", {});
  const problem = h("div", {});
  const compose = h("div", {});
  const contract = contractPanel(taskId);
  const invite = invitePanel((parts, status, doing) => post(parts, status, doing));
  const surfaces = a2uiPanel({ send: (parts, status) => post(parts, status, "sending…") });
  let files = null; // the compose box's attached files (upload.js)
  const steps = stepsView(entry); // (each turn's tool calls, collapsed)
  main.append(
    header, problem,
    h("div", { class: "columns" },
      h("div", {},
        h("section", { class: "panel" }, h("h2", {}, "Timeline"), timeline),
        surfaces.node, compose),
      h("div", {},
        contract.panel,
        h("section", { class: "panel" }, h("h2", {}, "Participants"), people, invite.node),
        h("section", { class: "panel" }, h("h2", {}, "Plan and sub-tasks"), plan),
        h("section", { class: "panel" }, h("h2", {}, "Push notifications"), pushes))));

  // --- the stream ---------------------------------------------------------------------------

  stream = follow(`tasks/${encodeURIComponent(taskId)}/events`, {}, {
    lastEventId: 0, // the whole log, then live
    onEvent: (event) => {
      if (event.event === "snapshot") showSnapshot(event.data.task);
      else if (event.data && event.data.kind) {
        showEvent(event.data);
        contract.note(event.data.kind, event.data.body);
      }
      if (event.event !== "snapshot") refreshPushSoon();
    },
    onError: (error, retrying) => {
      clear(problem).append(h("p", { class: "notice error" },
        retrying ? `Live updates interrupted (${error.message}); reconnecting…` : error.message));
    },
    onOpen: () => clear(problem),
    resume: () => !snapshot || !TERMINAL.has(stateName(snapshot.status?.state)),
  });

  function entry(kind, at, who, ...content) {
    const item = h("li", { class: kind, "data-kind": kind },
      h("div", { class: "head" }, who ? h("span", { class: "who" }, who) : null,
        h("span", {}, kind), at ? timeCell(at) : null),
      ...content);
    timeline.append(item);
    return item;
  }

  function messageContent(message) {
    if (!message) return [];
    return renderParts(message.parts);
  }

  function showEvent({ kind, at, body }) {
    if (kind === "task") {
      showTaskEvent(at, body);
      return;
    }
    if (kind === "status") {
      const message = body.status?.message;
      known = known && { ...known, status: body.status, metadata: { ...known.metadata, ...body.metadata } };
      if (steps.show(at, message)) { // (a step event: in its turn's entry)
        if (message.messageId) shownMessages.add(message.messageId);
        return;
      }
      // A model's answer streams into an artifact, then ends the turn as its status message:
      // the same text, shown once (the artifact above), the status entry saying only the state.
      const answered = message && sameAsArtifact(message);
      const item = entry("status", at, message && !answered ? senderOf(message) : null,
        h("div", {}, "→ ", stateBadge(stateName(body.status?.state), subStateOf(body.metadata))),
        ...(answered ? [] : messageContent(message)));
      if (message?.messageId) shownMessages.add(message.messageId);
      if (answered) answered.item.dataset.answer = "true";
      steps.usage(item, message);
      markHelp(item, message?.parts);
      return;
    }
    if (kind === "message") {
      if (body.messageId) shownMessages.add(body.messageId);
      const item = entry("message", at, senderOf(body), ...messageContent(body));
      markHelp(item, body.parts);
      return;
    }
    if (kind === "artifact") {
      showArtifact(at, body);
      return;
    }
    entry(kind, at, null, h("pre", {}, JSON.stringify(body, null, 2))); // a kind not known yet
  }

  // The log's first event is the task as created, with its first messages; a later task event
  // is the whole task written again (an admin's change, a sub-task's state …): shown as what
  // it changed.
  function showTaskEvent(at, body) {
    if (!known) {
      const item = entry("task", at, null, h("div", {}, "created, ",
        stateBadge(stateName(body.status?.state), subStateOf(body.metadata))));
      item.dataset.event = "created";
      for (const message of body.history || []) {
        if (message.messageId) shownMessages.add(message.messageId);
        item.append(h("div", { class: "head" }, h("span", { class: "who" }, senderOf(message))),
          ...messageContent(message));
      }
      known = body;
      return;
    }
    const { lines, unseen } = snapshotChanges(known, body, shownMessages);
    known = body;
    const item = entry("task", at, null,
      lines.length ? h("ul", { class: "changes" }, lines.map((line) => h("li", {}, line)))
        : h("div", { class: "muted" }, "updated (nothing shown here changed)"));
    item.dataset.event = "updated";
    item.querySelector(".head span:not(.who)").textContent = "task updated";
    for (const message of unseen) {
      shownMessages.add(message.messageId);
      item.append(h("div", { class: "head" }, h("span", { class: "who" }, senderOf(message))),
        ...messageContent(message));
    }
  }

  function sameAsArtifact(message) {
    if (message.role !== "ROLE_AGENT") return null;
    const text = textOf(message.parts);
    if (!text || (message.parts || []).some((p) => typeof p.text !== "string")) return null;
    // (an artifact stands for one answer: an older turn's same words are not this one's)
    const shown = [...artifacts.values()].reverse().find((a) => !a.item.dataset.answer && a.text.trim() === text);
    return shown || null;
  }

  function markHelp(item, parts) {
    if (!isHelpRequest(parts)) return;
    item.classList.add("help");
    const forMe = (parts || []).some((p) => me && addressees(p.data).includes(me));
    if (forMe) item.dataset.forMe = "true";
  }

  // Artifact chunks: an append adds to the artifact's entry (a streamed reply grows as its
  // tokens come); anything else replaces what the entry shows.
  function showArtifact(at, update) {
    const artifact = update.artifact || {};
    const id = artifact.artifactId;
    if (isA2ui(artifact)) { // (drawn in the Surfaces panel; the timeline says what changed)
      surfaces.update(artifact);
      entry("artifact", at, null, h("div", { class: "muted" }, summary(artifact))).dataset.artifactId = id;
      return;
    }
    let shown = artifacts.get(id);
    if (!shown || !update.append) {
      if (shown) shown.item.remove();
      const body = h("div", { class: "artifact-body" });
      const title = `artifact ${artifact.name || shortId(id || "")}`;
      const item = entry("artifact", at, null, h("div", { class: "muted" }, title), body);
      item.dataset.artifactId = id;
      shown = { item, body, lastText: null, text: "" };
      artifacts.set(id, shown);
    }
    for (const part of artifact.parts || []) {
      if (typeof part.text === "string") shown.text += part.text;
      if (typeof part.text === "string" && shown.lastText) {
        shown.lastText.textContent += part.text;
      } else {
        const node = renderPart(part);
        shown.body.append(node);
        shown.lastText = typeof part.text === "string" ? node : null;
      }
    }
    shown.body.classList.toggle("streaming", !update.lastChunk);
  }

  // --- the task as it stands ------------------------------------------------------------------

  function showSnapshot(task) {
    const before = snapshot;
    snapshot = task;
    const state = stateName(task.status?.state);
    const harness = harnessOf(task);
    clear(header).append(
      h("h1", {}, harness?.name || `Task ${shortId(task.id)}`,
        h("a", { class: "raw-link", id: "raw-link", href: `#/raw/${encodeURIComponent(task.id)}`, title: "the JSON-RPC exchange and the card, as a client sees them" }, "raw")),
      h("section", { class: "panel" }, h("dl", { class: "facts" },
        h("dt", {}, "task"), h("dd", { class: "mono", id: "task-id" }, task.id),
        h("dt", {}, "state"), h("dd", { id: "task-state" }, stateBadge(state, subStateOf(task.metadata))),
        h("dt", {}, "context"), h("dd", {}, h("a", { class: "mono", href: `#/tasks?context=${encodeURIComponent(task.contextId)}` }, task.contextId)),
        h("dt", {}, "last update"), h("dd", {}, timeCell(task.status?.timestamp || "")),
        harness?.goal ? [h("dt", {}, "goal"), h("dd", {}, harness.goal)] : null)));
    showPeople(harness);
    invite.update(harness, me, TERMINAL.has(state));
    showPlan(harness);
    if (!before || stateName(before.status?.state) !== state || !compose.firstChild) showCompose(task, harness);
    if (TERMINAL.has(state)) for (const shown of artifacts.values()) shown.body.classList.remove("streaming");
  }

  function showPeople(harness) {
    const list = harness?.participants || [];
    clear(people).append(list.length
      ? h("table", {}, h("tbody", {}, list.map((p) => h("tr", {},
        h("td", {}, String(p.id), p.id === me ? h("span", { class: "muted" }, " (you)") : null),
        h("td", {}, String(p.role || "")), h("td", { class: "muted" }, String(p.kind || ""))))))
      : h("p", { class: "muted" }, "Not a conversation: no participants listed."));
  }

  // A sub-task, parent or linked task: a link to its page (a child on another agent has its
  // stand-in here, under the reference's id), with its last state and the agent it runs on.
  function taskLink(ref) {
    const id = String(ref.task_id);
    const state = ref.state ? stateName(ref.state) : "";
    return h("span", { class: "task-ref", "data-task-ref": id },
      h("a", { class: "mono", href: `#/task/${encodeURIComponent(id)}`, title: id }, shortId(id)),
      state ? [" ", stateBadge(state, ref.sub_state || "")] : null,
      h("span", { class: "muted" }, ref.agent ? ` on ${String(ref.agent.id ?? "another agent")}` : " on this agent"));
  }

  function showPlan(harness) {
    const steps = harness?.plan?.steps || [];
    const subs = harness?.sub_tasks || [];
    const parents = harness?.parent_tasks || [];
    clear(plan);
    if (!steps.length && !subs.length && !parents.length) {
      plan.append(h("p", { class: "muted" }, "No plan or sub-tasks."));
      return;
    }
    if (steps.length) {
      plan.append(h("ol", {}, steps.map((s) => h("li", {}, String(s.name ?? s.id),
        h("span", { class: "muted" }, ` · ${s.state ?? "pending"}`),
        (s.linked_tasks || []).map((ref) => [" ", taskLink(ref)])))));
    }
    if (subs.length) plan.append(h("div", {}, "sub-tasks", h("ul", { class: "refs", id: "sub-tasks" }, subs.map((ref) => h("li", {}, taskLink(ref))))));
    if (parents.length) plan.append(h("div", {}, "parent ", parents.map((ref) => taskLink(ref))));
  }

  // --- push configs -----------------------------------------------------------------------------

  async function showPush() {
    let answer;
    try {
      answer = await getJson(`tasks/${encodeURIComponent(taskId)}/push`);
    } catch (error) {
      clear(pushes).append(h("p", { class: "muted" }, error.message));
      return;
    }
    const configs = answer.configs || [];
    clear(pushes).append(configs.length
      ? h("table", {}, h("thead", {}, h("tr", {}, ["webhook", "delivery", "failures"].map((t) => h("th", {}, t)))),
        h("tbody", {}, configs.map((c) => h("tr", {},
          h("td", {}, h("div", { class: "mono" }, c.url), h("div", { class: "muted" }, `id ${c.id}${c.authScheme ? ` · ${c.authScheme}` : ""}${c.hasToken ? " · token" : ""}`)),
          h("td", {}, h("span", { class: c.state === "failing" ? "bad" : c.state === "done" ? "ok" : "" }, c.state || "?"),
            c.taskSeq !== undefined ? h("div", { class: "muted" }, `through event ${c.deliveredThrough} of ${c.taskSeq}`) : null),
          h("td", {}, String(c.failures ?? 0), c.lastError ? h("div", { class: "error" }, c.lastError) : null)))))
      : h("p", { class: "muted" }, "No push configs."));
  }

  function refreshPushSoon() {
    clearTimeout(pushTimer);
    pushTimer = setTimeout(showPush, 800);
  }

  // --- compose ----------------------------------------------------------------------------------

  function commands() {
    const extensions = card?.capabilities?.extensions || [];
    const found = extensions.find((e) => e.uri === COMMANDS_URI);
    const list = found?.params?.commands;
    return Array.isArray(list) ? list.filter((c) => c && typeof c.name === "string") : [];
  }

  function showCompose(task, harness) {
    clear(compose);
    const state = stateName(task.status?.state);
    if (TERMINAL.has(state)) return;
    const conversation = Boolean(harness);
    const panel = h("section", { class: "panel compose", id: "compose" });
    const status = h("span", { class: "muted", id: "compose-status" });
    if (conversation || state === "input-required" || state === "auth-required") {
      const list = h("ul", { class: "suggest", hidden: true, id: "suggest" });
      const text = h("textarea", {
        id: "compose-text", placeholder: commands().length ? "a message, or / for commands" : "a message",
        oninput: () => suggest(text, list),
        onkeydown: (event) => keys(event, text, list),
      });
      panel.append(h("h2", {}, "Send"), text, list);
      files = attachments(card, status); // (files: when the card lists the media extension)
      if (files) panel.append(files.element);
      const send = h("button", { class: "primary", id: "send", onclick: () => sendText(text, status) }, "Send");
      const actions = h("div", { class: "actions" }, send, status, h("span", { class: "spacer" }));
      if (conversation) actions.append(h("button", { id: "complete", onclick: () => complete(status) }, "Complete"));
      actions.append(h("button", { class: "danger", id: "cancel", onclick: () => cancel(status) }, "Cancel"));
      panel.append(actions);
    } else {
      panel.append(h("div", { class: "actions" }, status, h("span", { class: "spacer" }),
        h("button", { class: "danger", id: "cancel", onclick: () => cancel(status) }, "Cancel")));
    }
    compose.append(panel);
  }

  function suggest(text, list) {
    const value = text.value;
    const match = /^\/([a-z0-9-]*)$/.exec(value);
    clear(list);
    if (!match) {
      list.hidden = true;
      return;
    }
    const found = commands().filter((c) => c.name.startsWith(match[1]));
    list.hidden = !found.length;
    found.forEach((c, index) => list.append(h("li", {
      class: index === 0 ? "chosen" : null, "data-name": c.name,
      onmousedown: (event) => { event.preventDefault(); pick(text, list, c.name); },
    }, `/${c.name}`, c.argument_hint ? h("span", { class: "hint" }, c.argument_hint) : null,
    c.description ? h("span", { class: "hint" }, `— ${c.description}`) : null)));
  }

  function pick(text, list, name) {
    text.value = `/${name} `;
    list.hidden = true;
    text.focus();
  }

  function keys(event, text, list) {
    const items = [...list.children];
    const chosen = items.findIndex((li) => li.classList.contains("chosen"));
    if (!list.hidden && items.length && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      const next = (chosen + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      items.forEach((li, i) => li.classList.toggle("chosen", i === next));
    } else if (!list.hidden && items.length && (event.key === "Tab" || event.key === "Enter")) {
      event.preventDefault();
      pick(text, list, items[Math.max(chosen, 0)].dataset.name);
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      sendText(text, compose.querySelector("#compose-status"));
    }
  }

  async function post(parts, status, doing) {
    status.textContent = doing;
    status.className = "muted";
    try {
      await a2a("POST", "/message:send", {
        message: { messageId: newId(), role: "ROLE_USER", parts, taskId },
        configuration: { returnImmediately: true },
      });
      status.textContent = "sent";
      return true;
    } catch (error) {
      status.textContent = error.message;
      status.className = "error";
      return false;
    }
  }

  async function sendText(text, status) {
    const value = text.value.trim();
    if (!value && !files?.count()) return;
    const attached = files ? files.take() : [];
    const parts = [...(value ? [{ text: value }] : []), ...attached];
    if (await post(parts, status, "sending…")) text.value = "";
    else if (files) files.restore(attached);
  }

  async function complete(status) {
    await post([{ data: { kind: "control", action: "complete" }, mediaType: EVENT_TYPE }], status, "completing…");
  }

  async function cancel(status) {
    if (!confirm("Cancel this task?")) return;
    status.textContent = "canceling…";
    try {
      await a2a("POST", `/tasks/${encodeURIComponent(taskId)}:cancel`, {});
      status.textContent = "canceled";
    } catch (error) {
      status.textContent = error.message;
      status.className = "error";
    }
  }

  showPush();
  return { stop: () => { stream.close(); clearTimeout(pushTimer); contract.stop(); } };
}
