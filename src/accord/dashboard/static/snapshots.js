// A task's log holds the whole task again whenever something outside a status or an artifact
// changes it (an admin's change of participants, a renamed task, a plan, a sub-task's state):
// the timeline shows such a snapshot as what it changed, not as the task from the start.

import { harnessOf, stateName, subStateOf } from "./parts.js";

const SHOWN_FIELDS = [
  ["name", "name"], ["goal", "goal"], ["description", "description"], ["type", "type"],
  ["lifecycle", "lifecycle"], ["model", "model"], ["reasoning_effort", "effort"],
];

function same(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function byId(list, key) {
  const found = new Map();
  for (const item of Array.isArray(list) ? list : []) {
    if (item && typeof item === "object") found.set(String(item[key]), item);
  }
  return found;
}

function participantChanges(before, after) {
  const lines = [];
  const old = byId(before, "id");
  const now = byId(after, "id");
  for (const [id, p] of now) {
    const was = old.get(id);
    if (!was) lines.push(`${id} joined as ${p.role ?? "participant"}${p.kind ? ` (${p.kind})` : ""}`);
    else if (was.role !== p.role) lines.push(`${id}: ${was.role} → ${p.role}`);
  }
  for (const id of old.keys()) if (!now.has(id)) lines.push(`${id} left`);
  return lines;
}

function refChanges(label, before, after) {
  const lines = [];
  const old = byId(before, "task_id");
  for (const [id, ref] of byId(after, "task_id")) {
    const was = old.get(id);
    const state = ref.state ? stateName(ref.state) : "?";
    if (!was) lines.push(`${label} ${id} (${state})`);
    else if (was.state !== ref.state || was.sub_state !== ref.sub_state) {
      lines.push(`${label} ${id}: ${was.state ? stateName(was.state) : "?"} → ${state}${ref.sub_state ? ` · ${ref.sub_state}` : ""}`);
    }
  }
  return lines;
}

function planChanges(before, after) {
  const old = byId(before?.steps, "id");
  const steps = Array.isArray(after?.steps) ? after.steps : [];
  if (!before && steps.length) return [`plan of ${steps.length} step${steps.length === 1 ? "" : "s"}`];
  const lines = [];
  for (const step of steps) {
    const was = old.get(String(step?.id));
    if (!was) lines.push(`plan step added: ${step?.name ?? step?.id}`);
    else if (was.state !== step.state) lines.push(`step ${step.name ?? step.id}: ${was.state ?? "pending"} → ${step.state ?? "pending"}`);
  }
  if (!lines.length && !same(before, after)) lines.push("plan changed");
  return lines;
}

// What `after` (a task snapshot) changed of `before` (the task as the timeline knew it):
// a list of short lines, and the messages of its history the timeline has not shown yet.
export function snapshotChanges(before, after, shownMessages) {
  const lines = [];
  const state = stateName(after.status?.state);
  const sub = subStateOf(after.metadata);
  if (before && (stateName(before.status?.state) !== state || subStateOf(before.metadata) !== sub)) {
    lines.push(`state → ${state}${sub ? ` · ${sub}` : ""}`);
  }
  const was = harnessOf(before) || {};
  const now = harnessOf(after) || {};
  for (const [field, label] of SHOWN_FIELDS) {
    if (!same(was[field], now[field])) lines.push(`${label}: ${now[field] ?? "(none)"}`);
  }
  if (!same(was.acceptance_criteria, now.acceptance_criteria)) {
    const met = (now.acceptance_criteria || []).filter((c) => c?.met).length;
    lines.push(`acceptance criteria: ${met} of ${(now.acceptance_criteria || []).length} met`);
  }
  lines.push(...participantChanges(was.participants, now.participants));
  lines.push(...refChanges("sub-task", was.sub_tasks, now.sub_tasks));
  lines.push(...refChanges("parent", was.parent_tasks, now.parent_tasks));
  if (!same(was.plan, now.plan)) lines.push(...planChanges(was.plan, now.plan));
  const known = new Set(Object.keys(before?.metadata || {}));
  for (const [key, value] of Object.entries(after.metadata || {})) {
    if (key.startsWith("io.github.madarauchiha-314.tiny-harness/")) continue; // (above)
    if (!known.has(key)) lines.push(`metadata ${key} set`);
    else if (!same(before.metadata[key], value)) lines.push(`metadata ${key} changed`);
  }
  const unseen = (after.history || []).filter((m) => m?.messageId && !shownMessages.has(m.messageId));
  return { lines, unseen };
}

// The text of a message's (or an artifact's) parts, to tell an answer shown already.
export function textOf(parts) {
  return (parts || []).map((p) => (typeof p?.text === "string" ? p.text : "")).join("").trim();
}
