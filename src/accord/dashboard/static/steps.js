// Visible work: the harness's step events (docs/harness.md, "Visible work") — a status whose
// message holds one part of the step media type — shown as one collapsed entry per turn:
// "2 tool calls · 1,234 tokens", opening to each model call (model, tokens, replayed) and each
// tool call (name, arguments, result or error, duration, replayed). The tokens of the call
// that answered come with the answer (its metadata, each call by `<turn>#<step>`); a turn
// with no tool call shows them on its answer. Everything is text: nothing becomes markup.

import { h } from "./dom.js";

export const STEP_TYPE = "application/vnd.accord.step+json";
export const USAGE_KEY = "accord.harness/usage";

export function stepOf(message) {
  if (!message || message.role !== "ROLE_AGENT") return null;
  const part = (message.parts || []).find((p) => p?.mediaType === STEP_TYPE);
  const data = part?.data;
  return data && typeof data === "object" && !Array.isArray(data) ? data : null;
}

const number = new Intl.NumberFormat("en-US");

function count(value) {
  return Number.isFinite(value) ? value : 0;
}

function tokens(used) {
  return `${number.format(count(used.input_tokens))} in (${number.format(count(used.cached_tokens))} cached) · ${number.format(count(used.output_tokens))} out`;
}

// The calls an answer's usage names: id -> {input_tokens, output_tokens, cached_tokens}.
function usageCalls(message) {
  const found = message?.metadata?.[USAGE_KEY];
  const calls = found && typeof found === "object" ? found.calls : null;
  const named = new Map();
  if (!calls || typeof calls !== "object") return { found, named };
  for (const [id, used] of Object.entries(calls)) {
    if (Array.isArray(used) && used.length === 3) {
      named.set(id, { input_tokens: used[0], output_tokens: used[1], cached_tokens: used[2] });
    }
  }
  return { found, named };
}

function turnOf(callId) {
  const at = callId.lastIndexOf("#");
  return at < 0 ? "" : callId.slice(0, at);
}

function plural(n, word) {
  return `${number.format(n)} ${word}${n === 1 ? "" : "s"}`;
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

// `entry(kind, at)` adds an entry to the timeline and answers its <li>.
export function stepsView(entry) {
  const turns = new Map(); // turn key -> its entry

  function turnEntry(turn, at) {
    let shown = turns.get(turn);
    if (shown) return shown;
    const label = h("span", { class: "steps-summary" });
    const list = h("div", { class: "steps-list" });
    const details = h("details", { class: "steps" }, h("summary", {}, label), list);
    const item = entry("steps", at, null, details);
    item.dataset.turn = turn;
    item.querySelector(".head span:not(.who)").textContent = "work";
    shown = { item, label, list, tools: new Map(), calls: new Map() };
    turns.set(turn, shown);
    return shown;
  }

  function summarise(shown) {
    const reported = [...shown.calls.values()].filter(Boolean);
    const sum = reported.reduce((n, used) => n + count(used.input_tokens) + count(used.output_tokens), 0);
    const parts = [plural(shown.tools.size, "tool call")];
    if (reported.length) parts.push(plural(sum, "token"));
    shown.label.textContent = parts.join(" · ");
  }

  function modelRow(shown, callId, label, used, replayed) {
    shown.calls.set(callId, used);
    shown.list.append(h("div", { class: "step model", "data-step-kind": "model_call", "data-call": callId },
      h("span", { class: "step-label" }, label),
      h("span", { class: "muted" }, used ? ` · ${tokens(used)} tokens` : " · tokens not reported"),
      replayed ? h("span", { class: "muted replayed" }, " · replayed") : null));
  }

  function toolRow(shown, id, name) {
    let row = shown.tools.get(id);
    if (row) return row;
    const outcome = h("span", { class: "muted outcome" }, "running…");
    const body = h("div", { class: "step-body" });
    const node = h("div", { class: "step tool", "data-step-kind": "tool_call", "data-tool-id": id },
      h("div", { class: "step-head" }, h("strong", { class: "tool-name" }, name), outcome), body);
    shown.list.append(node);
    row = { node, outcome, body };
    shown.tools.set(id, row);
    return row;
  }

  function showModelCall(shown, data) {
    const step = Number.isInteger(data.step) ? data.step : 0;
    const calls = Array.isArray(data.tool_calls) ? data.tool_calls.filter((c) => c && typeof c === "object") : [];
    const names = calls.map((c) => String(c.name ?? "?")).join(", ");
    const used = data.usage && typeof data.usage === "object" ? data.usage : null;
    modelRow(shown, `${data.turn}#${step}`, `model ${String(data.model ?? "")} · step ${step} → ${names}`, used, data.replayed === true);
    for (const call of calls) toolRow(shown, String(call.id ?? ""), String(call.name ?? "?"));
  }

  function showToolCall(shown, data) {
    const row = toolRow(shown, String(data.id ?? ""), String(data.name ?? "?"));
    row.node.classList.toggle("error", data.error === true);
    const took = typeof data.duration_ms === "number" ? ` · ${number.format(Math.round(data.duration_ms))} ms` : "";
    row.outcome.textContent = `${data.error === true ? "failed" : "done"}${took}${data.replayed === true ? " · replayed" : ""}`;
    row.outcome.className = data.error === true ? "outcome bad" : "muted outcome";
    const result = String(data.result ?? "") + (data.truncated === true ? "\n… (cut to its first 4,000 characters)" : "");
    row.body.replaceChildren(
      h("div", { class: "step-label" }, "arguments"),
      data.arguments === null || data.arguments === undefined
        ? h("div", { class: "muted arguments" }, "withheld")
        : h("pre", { class: "arguments" }, json(data.arguments)),
      h("div", { class: "step-label" }, data.error === true ? "error" : "result"),
      h("pre", { class: "result" }, result));
  }

  // A step event's message: shown in its turn's entry (true), or not one (false).
  function show(at, message) {
    const data = stepOf(message);
    if (!data) return false;
    const shown = turnEntry(String(data.turn ?? ""), at);
    if (data.kind === "model_call") showModelCall(shown, data);
    else if (data.kind === "tool_call") showToolCall(shown, data);
    summarise(shown);
    return true;
  }

  // A message that ends a stretch of a turn carries its model calls' tokens: those its turn's
  // entry does not show yet join it (the call that answered); a turn with no entry (no tool
  // call) shows them on the message's own entry, `item`.
  function usage(item, message) {
    const { found, named } = usageCalls(message);
    if (!found || typeof found !== "object") return;
    let loose = null;
    for (const [callId, used] of named) {
      const shown = turns.get(turnOf(callId));
      if (!shown) {
        loose = loose || { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };
        for (const key of Object.keys(loose)) loose[key] += count(used[key]);
        continue;
      }
      if (shown.calls.has(callId)) continue;
      const [, step] = callId.slice(turnOf(callId).length + 1).match(/^(\d+)/) || [];
      const what = callId.endsWith("/summary") ? "summary of the conversation" : "answer";
      modelRow(shown, callId, `model call · step ${step ?? "?"} · ${what}`, used, false);
      summarise(shown);
    }
    if (!named.size) loose = found; // (a message of before calls were named: its sums)
    if (loose) item.append(h("div", { class: "muted usage" }, `tokens: ${tokens(loose)}`));
  }

  return { show, usage };
}
