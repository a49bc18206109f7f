// Message and artifact parts as the page shows them: text as text, data as JSON, files by
// name; the harness's channel messages and envelopes by what they say. An unknown media type
// is shown generically, as its JSON.

import { h } from "./dom.js";

export const STATUS_KEY = "io.github.madarauchiha-314.tiny-harness/status";
export const TASK_KEY = "io.github.madarauchiha-314.tiny-harness/task";
export const CHANNEL_TYPE = "application/vnd.tiny-harness.channel+json";
export const EVENT_TYPE = "application/vnd.tiny-harness.event+json";
export const COMMANDS_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1";

export function stateName(state) {
  return String(state || "").replace(/^TASK_STATE_/, "").toLowerCase().replace(/_/g, "-");
}

export function subStateOf(metadata) {
  const value = metadata?.[STATUS_KEY]?.sub_state;
  return typeof value === "string" ? value : "";
}

export function harnessOf(task) {
  const value = task?.metadata?.[TASK_KEY];
  return value && typeof value === "object" ? value : null;
}

export function senderOf(message) {
  const id = message?.metadata?.participant_id;
  if (typeof id === "string" && id) return id;
  return message?.role === "ROLE_AGENT" ? "agent" : "user";
}

// Who a help request is for: the channel data's addressee fields, whichever it carries.
export function addressees(data) {
  const found = [];
  for (const key of ["to", "addressed_to", "participant_id", "recipient", "recipients"]) {
    const value = data?.[key];
    if (typeof value === "string") found.push(value);
    else if (Array.isArray(value)) found.push(...value.filter((v) => typeof v === "string"));
  }
  return found;
}

export function isHelpRequest(parts) {
  return (parts || []).some((p) => p.mediaType === CHANNEL_TYPE && p.data?.kind === "help_request");
}

function json(value) {
  return JSON.stringify(value, null, 2);
}

function channelPart(data) {
  const kind = typeof data.kind === "string" ? data.kind : "message";
  const to = addressees(data);
  return h("div", { class: `channel ${kind}`, "data-channel-kind": kind },
    h("div", { class: "head" },
      h("span", { class: "who" }, String(data.sender ?? "?")),
      h("span", {}, kind.replace("_", " ")),
      to.length ? h("span", {}, `to ${to.join(", ")}`) : null,
      data.channel_id ? h("span", { class: "mono" }, `channel ${data.channel_id}`) : null,
      data.in_reply_to ? h("span", {}, `in reply to ${data.in_reply_to}`) : null),
    data.text ? h("div", { class: "part" }, String(data.text)) : null,
    Array.isArray(data.parts) ? data.parts.map((p) =>
      p && p.kind === "text" ? h("div", { class: "part" }, String(p.text ?? ""))
        : h("pre", { class: "part data" }, json(p?.data ?? p))) : null);
}

function envelopePart(data) {
  if (data.kind === "control") {
    return h("div", { class: "part" }, h("strong", {}, `control: ${String(data.action ?? "")}`));
  }
  return h("div", { class: "part" },
    h("span", { class: "media" }, `envelope: ${String(data.kind ?? "")}`),
    h("pre", { class: "data" }, json(data.payload ?? data)));
}

export function renderPart(part) {
  if (typeof part.text === "string") {
    return h("div", { class: "part text" }, part.text);
  }
  if (part.data !== undefined) {
    if (part.mediaType === CHANNEL_TYPE && part.data && typeof part.data === "object") {
      return channelPart(part.data);
    }
    if (part.mediaType === EVENT_TYPE && part.data && typeof part.data === "object") {
      return envelopePart(part.data);
    }
    return h("div", { class: "part data" },
      h("span", { class: "media" }, part.mediaType || "application/json"), json(part.data));
  }
  const label = part.filename || (part.url ? part.url : "file");
  const size = typeof part.raw === "string" ? ` · ${Math.floor((part.raw.length * 3) / 4)} bytes` : "";
  return h("div", { class: "part file" },
    h("span", { class: "media" }, `${part.mediaType || "file"}${size}`),
    part.url ? h("a", { href: part.url, rel: "noopener noreferrer", target: "_blank" }, label) : label);
}

export function renderParts(parts) {
  return (parts || []).map(renderPart);
}
