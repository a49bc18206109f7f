// The contract a task runs under, on its page: found in the task's messages (OpenClasp's
// trust metadata names it), read from the operators' contract API (GET /contracts/{id}, as the
// signed-in caller: it takes the accord.contracts.Operator actor) — its status, parties, terms
// hash and the last enforcement decisions, this task's marked — and read again when the task
// moves.

import { append, clear, h, shortId, timeCell } from "./dom.js";
import { HttpError, headers } from "./net.js";

export const TRUST_URI = "https://openclasp.vercel.app/extensions/trust/v0.1";
export const CONTRACTS_URI = "urn:accord:a2a:contracts:v1";

// The contract ids a log event's messages name.
function named(kind, body) {
  const messages = kind === "task" ? body.history || []
    : kind === "message" ? [body]
      : kind === "status" && body.status?.message ? [body.status.message] : [];
  const ids = [];
  for (const message of messages) {
    const id = message?.metadata?.[TRUST_URI]?.interactionId;
    if (typeof id === "string" && /^[0-9a-fA-F-]{36}$/.test(id)) ids.push(id);
  }
  return ids;
}

async function readContract(id) {
  const response = await fetch(`/contracts/${encodeURIComponent(id)}`, { headers: headers(), cache: "no-store" });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).error?.message || message;
    } catch {
      /* not JSON */
    }
    throw new HttpError(response.status, message);
  }
  return response.json();
}

export function contractPanel(taskId) {
  const body = h("div", { id: "contract" });
  const panel = h("section", { class: "panel", hidden: true }, h("h2", {}, "Contract"), body);
  const ids = new Set();
  let timer = null;

  function note(kind, data) {
    let fresh = false;
    for (const id of named(kind, data)) {
      if (!ids.has(id)) {
        ids.add(id);
        fresh = true;
      }
    }
    if (ids.size && (fresh || kind === "status")) {
      clearTimeout(timer);
      timer = setTimeout(show, fresh ? 0 : 600);
    }
  }

  async function show() {
    panel.hidden = false;
    const shown = [];
    for (const id of ids) {
      try {
        shown.push(describe(await readContract(id)));
      } catch (error) {
        const why = error instanceof HttpError && error.status === 403
          ? "reading a contract takes the operator actor (accord.contracts.Operator)"
          : error instanceof HttpError && error.status === 404 ? "not known on this agent" : error.message;
        shown.push(h("div", { class: "contract" }, h("div", { class: "mono" }, id), h("p", { class: "muted" }, why)));
      }
    }
    append(clear(body), shown);
  }

  function describe(record) {
    const doc = record.interaction || {};
    const initiator = String(doc.initiatorAgentId ?? "?");
    const responder = String(doc.responderAgentId ?? "?");
    const me = record.localAgent;
    const who = (agent) => [agent, agent === me ? h("span", { class: "muted" }, " (this agent)") : null];
    const decisions = (record.decisions || []).slice(0, 8);
    const approvals = (record.approvals || []).filter((a) => a.taskId === taskId);
    return h("div", { class: "contract", "data-contract": doc.interactionId },
      h("dl", { class: "facts" },
        h("dt", {}, "contract"), h("dd", { class: "mono", title: doc.interactionId }, shortId(String(doc.interactionId || ""))),
        h("dt", {}, "status"), h("dd", {}, h("span", { class: `contract-status ${doc.status}`, id: "contract-status" }, String(doc.status))),
        h("dt", {}, "initiator"), h("dd", {}, who(initiator)),
        h("dt", {}, "responder"), h("dd", {}, who(responder)),
        h("dt", {}, "terms hash"), h("dd", { class: "mono", id: "terms-hash", title: doc.termsHash }, String(doc.termsHash || "")),
        doc.contract?.purpose ? [h("dt", {}, "purpose"), h("dd", {}, String(doc.contract.purpose))] : null,
        doc.expiresAt ? [h("dt", {}, "expires"), h("dd", {}, h("time", { datetime: doc.expiresAt }, `${String(doc.expiresAt).slice(0, 16).replace("T", " ")} UTC`))] : null,
        approvals.length ? [h("dt", {}, "approved"), h("dd", {}, approvals.map((a) => `${a.action} by ${a.by}`).join(", "))] : null),
      h("h3", {}, "Last decisions"),
      decisions.length
        ? h("ol", { class: "decisions", id: "decisions" }, decisions.map((d) => h("li", {
          class: d.taskId === taskId ? "this-task" : null, "data-outcome": d.outcome,
        },
        h("span", { class: `outcome ${d.outcome}` }, d.outcome), " ",
        d.action ? h("code", {}, d.action) : "(no action)",
        d.sender ? ` from ${d.sender}` : "",
        d.taskId === taskId ? h("span", { class: "muted" }, " · this task")
          : d.taskId ? [" · ", h("a", { class: "mono", href: `#/task/${encodeURIComponent(d.taskId)}` }, shortId(d.taskId))] : null,
        " ", timeCell(d.at),
        d.code ? h("div", { class: "error" }, `${d.code}: ${d.reason || ""}`) : null)))
        : h("p", { class: "muted" }, "None since this server started."));
  }

  return { panel, note, stop: () => clearTimeout(timer) };
}
