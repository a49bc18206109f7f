// Talking to the server: the credentials entered once (kept for this browser session only),
// JSON requests, and Server-Sent Events read with fetch (EventSource cannot send credentials
// headers) that resume with Last-Event-ID after a break.

const KEY = "accord.dashboard";

// Where the server is: the path before /ui/ ("" at the root; the prefix when the server is
// mounted in another application, accord.asgi).
export const ROOT = location.pathname.replace(/\/ui\/[^/]*$/, "");

export const session = {
  load() {
    try {
      return JSON.parse(sessionStorage.getItem(KEY) || "{}");
    } catch {
      return {};
    }
  },
  save(values) {
    sessionStorage.setItem(KEY, JSON.stringify({ ...this.load(), ...values }));
  },
  forget() {
    sessionStorage.removeItem(KEY);
  },
};

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function headers(extra) {
  const saved = session.load();
  const out = { ...extra };
  if (saved.token) {
    if (saved.kind === "apiKey") out["X-API-Key"] = saved.token;
    else out.Authorization = `Bearer ${saved.token}`;
  }
  if (saved.participant) out["X-Participant-Id"] = saved.participant;
  return out;
}

// The tenant an open-mode session chose (the API's path prefix; "" is the default tenant).
export function tenant() {
  return session.load().tenant || "";
}

export function apiPath(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") query.set(name, value);
  }
  if (tenant()) query.set("tenant", tenant());
  const text = query.toString();
  return `${ROOT}/ui/api/${path}${text ? `?${text}` : ""}`;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    message = body.error?.message || message;
  } catch {
    /* not JSON */
  }
  return new HttpError(response.status, message);
}

export async function getJson(path, params) {
  const response = await fetch(apiPath(path, params), { headers: headers() });
  if (!response.ok) throw await failure(response);
  return response.json();
}

// An A2A operation over HTTP+JSON, as the signed-in caller.
export async function a2a(method, path, body) {
  const prefix = tenant() ? `/${encodeURIComponent(tenant())}` : "";
  const init = { method, headers: headers({ "A2A-Version": "1.0" }) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(ROOT + prefix + path, init);
  if (!response.ok) throw await failure(response);
  return response.json();
}

export async function card() {
  const response = await fetch(`${ROOT}/.well-known/agent-card.json`);
  return response.ok ? response.json() : null;
}

// Live status for the header: how many streams are open and receiving.
const liveStreams = new Set();
function showLive() {
  const badge = document.getElementById("live");
  if (!badge) return;
  const on = liveStreams.size > 0;
  badge.textContent = on ? "live" : "offline";
  badge.classList.toggle("on", on);
}

// Follow an SSE stream. onEvent({event, id, data}) gets each event (data parsed as JSON).
// A break resumes with the last id seen; resume() (optional) says whether an end the server
// chose should be resumed too (a timeline ends by itself once its task is final).
export function follow(path, params, { onEvent, onOpen, onError, resume, lastEventId }) {
  const controller = new AbortController();
  let lastId = lastEventId ?? null;
  let delay = 500;
  let closed = false;
  const marker = {};

  async function connect() {
    while (!closed) {
      let ended = false;
      try {
        const extra = lastId !== null ? { "Last-Event-ID": String(lastId) } : {};
        const response = await fetch(apiPath(path, params), {
          headers: headers(extra),
          signal: controller.signal,
          cache: "no-store",
        });
        if (!response.ok) {
          const error = await failure(response);
          if (response.status < 500) {
            closed = true;
            onError?.(error);
            return;
          }
          throw error;
        }
        liveStreams.add(marker);
        showLive();
        onOpen?.();
        delay = 500;
        await read(response.body, (event) => {
          if (event.id !== null) lastId = event.id;
          onEvent(event);
        });
        ended = true;
      } catch (error) {
        if (closed || controller.signal.aborted) return;
        onError?.(error, true);
      } finally {
        liveStreams.delete(marker);
        showLive();
      }
      if (closed) return;
      if (ended && resume && !resume()) return;
      await new Promise((done) => setTimeout(done, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  connect();
  return {
    close() {
      closed = true;
      controller.abort();
      liveStreams.delete(marker);
      showLive();
    },
    get lastId() {
      return lastId;
    },
  };
}

// text/event-stream: fields per line, an event per blank line; comments (keep-alives) skipped.
async function read(body, deliver) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { event: "message", id: null, data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let newline;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (event.data.length) {
          let data = event.data.join("\n");
          try {
            data = JSON.parse(data);
          } catch {
            /* kept as text */
          }
          deliver({ event: event.event, id: event.id, data });
        }
        event = { event: "message", id: null, data: [] };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "data") event.data.push(text);
      else if (field === "event") event.event = text;
      else if (field === "id") event.id = text;
    }
  }
}
