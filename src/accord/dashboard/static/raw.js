// The raw view of a task (#/raw/<task id>), as the A2A inspector shows an exchange: the
// JSON-RPC requests this page sends for it (GetTask, then SubscribeToTask while the task has
// not ended) and what came back — the response, and each Server-Sent Event frame as it
// arrives, as written — and the agent's card with what a client would warn about in it.
// Credentials are sent as for every request of the dashboard and shown masked.

import { append, clear, h, shortId } from "./dom.js";
import { headers, tenant } from "./net.js";
import { stateName } from "./parts.js";

const TERMINAL = new Set(["completed", "failed", "canceled", "rejected"]);
const SECRET_HEADERS = new Set(["authorization", "x-api-key"]);
const MAX_FRAMES = 500; // shown; older frames are dropped from the page (not from the task)

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function shownHeaders(sent) {
  return Object.entries(sent).map(([name, value]) =>
    `${name}: ${SECRET_HEADERS.has(name.toLowerCase()) ? `${String(value).slice(0, 6)}•••` : value}`).join("\n");
}

function exchange(title, method, url, sent, body) {
  const response = h("div", { class: "response" }, h("p", { class: "muted" }, "waiting…"));
  const node = h("section", { class: "panel exchange", "data-method": method },
    h("h2", {}, title),
    h("div", { class: "raw-head" }, h("strong", {}, "→ request"), ` POST ${url}`),
    h("pre", { class: "raw" }, `${shownHeaders(sent)}\n\n${JSON.stringify(body, null, 2)}`),
    h("div", { class: "raw-head" }, h("strong", {}, "← response")),
    response);
  return { node, response };
}

function rpc(method, params, id) {
  const body = { jsonrpc: "2.0", id, method, params: tenant() ? { ...params, tenant: tenant() } : params };
  return body;
}

// What a client would warn about in an A2A 1.0 card: missing or malformed fields, fields of
// older versions, placeholders, plain http off this machine, dangling security references.
export function cardWarnings(card) {
  const warnings = [];
  if (!card || typeof card !== "object") return ["no card: /.well-known/agent-card.json did not answer JSON"];
  const known = new Set(["name", "description", "version", "supportedInterfaces", "provider",
    "documentationUrl", "capabilities", "securitySchemes", "securityRequirements",
    "defaultInputModes", "defaultOutputModes", "skills", "signatures", "iconUrl"]);
  const older = new Set(["url", "protocolVersion", "preferredTransport", "additionalInterfaces",
    "security", "supportsAuthenticatedExtendedCard"]);
  for (const field of ["name", "description", "version"]) {
    if (typeof card[field] !== "string" || !card[field].trim()) warnings.push(`${field}: missing (required)`);
  }
  if (card.version === "0.0.0") warnings.push("version: 0.0.0, a placeholder — clients cannot tell releases apart");
  for (const field of ["defaultInputModes", "defaultOutputModes", "skills", "supportedInterfaces"]) {
    if (!Array.isArray(card[field]) || !card[field].length) warnings.push(`${field}: missing or empty (required)`);
  }
  if (!card.capabilities || typeof card.capabilities !== "object") warnings.push("capabilities: missing (required)");
  for (const field of Object.keys(card)) {
    if (older.has(field)) warnings.push(`${field}: a field of A2A 0.3, not of 1.0 (1.0 clients ignore it)`);
    else if (!known.has(field)) warnings.push(`${field}: not a field of the A2A 1.0 card`);
  }
  (card.supportedInterfaces || []).forEach((iface, n) => {
    const at = `supportedInterfaces[${n}]`;
    if (!["JSONRPC", "GRPC", "HTTP+JSON"].includes(iface?.protocolBinding)) warnings.push(`${at}.protocolBinding: ${JSON.stringify(iface?.protocolBinding)} is not JSONRPC, GRPC or HTTP+JSON`);
    if (!iface?.protocolVersion) warnings.push(`${at}.protocolVersion: missing`);
    let url = null;
    try {
      url = new URL(iface?.url);
    } catch {
      warnings.push(`${at}.url: not an absolute URL (${JSON.stringify(iface?.url)})`);
    }
    if (url && url.protocol === "http:" && !["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
      warnings.push(`${at}.url: plain http to ${url.hostname}: credentials would cross the network unencrypted`);
    }
    if (url && iface?.protocolBinding !== "GRPC" && url.host !== location.host) {
      warnings.push(`${at}.url: ${url.host}, not the address this page reached (${location.host}): is public_url set?`);
    }
  });
  const ids = new Set();
  (card.skills || []).forEach((skill, n) => {
    for (const field of ["id", "name", "description"]) {
      if (typeof skill?.[field] !== "string" || !skill[field]) warnings.push(`skills[${n}].${field}: missing (required)`);
    }
    if (!Array.isArray(skill?.tags) || !skill.tags.length) warnings.push(`skills[${n}].tags: missing or empty (required)`);
    if (ids.has(skill?.id)) warnings.push(`skills[${n}].id: ${skill.id} is listed twice`);
    ids.add(skill?.id);
  });
  const schemes = new Set(Object.keys(card.securitySchemes || {}));
  (card.securityRequirements || []).forEach((requirement, n) => {
    for (const name of Object.keys(requirement?.schemes || requirement || {})) {
      if (!schemes.has(name)) warnings.push(`securityRequirements[${n}]: ${name} is not one of securitySchemes`);
    }
  });
  (card.capabilities?.extensions || []).forEach((extension, n) => {
    if (!extension?.uri) warnings.push(`capabilities.extensions[${n}].uri: missing`);
  });
  if (!card.signatures?.length) warnings.push("signatures: none — a client cannot verify who published this card (accord signs it with [identity] key_file)");
  return warnings;
}

export function rawPage({ main, card }, taskId) {
  const controller = new AbortController();
  const rpcPanels = h("div", { id: "raw-rpc" });
  const cardPanel = h("div", { id: "raw-card" });
  main.append(
    h("h1", {}, `Raw exchange of task ${shortId(taskId)}`),
    h("p", {}, h("a", { href: `#/task/${encodeURIComponent(taskId)}` }, "← the task's page"),
      h("span", { class: "muted" }, " · what a client sends and receives for this task, over JSON-RPC (POST /)")),
    h("div", { class: "columns" }, rpcPanels, cardPanel));

  showCard();
  run();

  function showCard() {
    const warnings = cardWarnings(card);
    append(clear(cardPanel), [h("section", { class: "panel" },
      h("h2", {}, "Agent card"),
      h("div", { class: "raw-head" }, "GET /.well-known/agent-card.json"),
      warnings.length
        ? h("ul", { class: "warnings", id: "card-warnings" }, warnings.map((w) => h("li", {}, w)))
        : h("p", { class: "ok", id: "card-warnings" }, "No warnings."),
      h("pre", { class: "raw" }, JSON.stringify(card, null, 2)))]);
  }

  async function run() {
    const sent = headers({ "Content-Type": "application/json", "A2A-Version": "1.0" });
    const get = rpc("GetTask", { id: taskId, historyLength: 0 }, 1);
    const first = exchange("GetTask", "GetTask", "/", sent, get);
    rpcPanels.append(first.node);
    let state = "";
    try {
      const response = await fetch("/", { method: "POST", headers: sent, body: JSON.stringify(get), signal: controller.signal });
      const text = await response.text();
      clear(first.response).append(
        h("pre", { class: "raw" }, `HTTP ${response.status}\ncontent-type: ${response.headers.get("content-type")}\n\n${pretty(text)}`));
      try {
        state = stateName(JSON.parse(text).result?.status?.state);
      } catch {
        /* not JSON: shown as it is */
      }
    } catch (error) {
      if (!controller.signal.aborted) clear(first.response).append(h("p", { class: "error" }, error.message));
      return;
    }
    if (!state) return; // (the error answer above says why)
    if (TERMINAL.has(state)) {
      rpcPanels.append(h("p", { class: "muted", id: "raw-ended" }, `The task is ${state}: a subscription would be refused, so none is opened.`));
      return;
    }
    await subscribe();
  }

  async function subscribe() {
    const sent = headers({ "Content-Type": "application/json", "A2A-Version": "1.0", Accept: "text/event-stream" });
    const body = rpc("SubscribeToTask", { id: taskId }, 2);
    const second = exchange("SubscribeToTask", "SubscribeToTask", "/", sent, body);
    rpcPanels.append(second.node);
    const frames = h("ol", { class: "frames", id: "frames" });
    try {
      const response = await fetch("/", { method: "POST", headers: sent, body: JSON.stringify(body), signal: controller.signal, cache: "no-store" });
      clear(second.response).append(
        h("pre", { class: "raw" }, `HTTP ${response.status}\ncontent-type: ${response.headers.get("content-type")}`), frames);
      if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
        frames.replaceWith(h("pre", { class: "raw" }, pretty(await response.text())));
        return;
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          showFrame(frames, buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
      frames.append(h("li", { class: "muted", "data-end": "true" }, "(the server ended the stream)"));
    } catch (error) {
      if (!controller.signal.aborted) second.response.append(h("p", { class: "error" }, error.message));
    }
  }

  function showFrame(frames, frame) {
    const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    let kind = "comment";
    try {
      const result = JSON.parse(data).result || {};
      kind = Object.keys(result)[0] || "error";
    } catch {
      /* a keep-alive comment, or not JSON */
    }
    // (as written: one frame, its fields and its JSON on one line, wrapped)
    frames.append(h("li", { class: "frame", "data-frame": kind },
      h("div", { class: "raw-head" }, kind), h("pre", { class: "raw" }, frame)));
    while (frames.children.length > MAX_FRAMES) frames.firstChild.remove();
  }

  return { stop: () => controller.abort() };
}
