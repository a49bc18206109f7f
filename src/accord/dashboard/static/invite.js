// Inviting someone into a conversation from its page: an admin of the task (the harness's
// roles: only an admin changes participants) adds a participant with a role. It is the
// harness's own admin envelope — a task envelope whose payload is the whole new participant
// list — sent through the A2A API as the signed-in caller, so the harness's rules decide, as
// for any client; the control is shown only to the task's admins.

import { h } from "./dom.js";
import { EVENT_TYPE } from "./parts.js";

export const ROLES = ["watcher", "reporter", "assignee", "admin"];

export function invitePanel(post) {
  let members = [];
  const id = h("input", { id: "invite-id", size: 14, placeholder: "participant id", required: true, maxlength: 256 });
  const role = h("select", { id: "invite-role", title: "their role" },
    ROLES.map((r) => h("option", { value: r }, r)));
  const kind = h("select", { id: "invite-kind", title: "a person or an agent" },
    h("option", { value: "human" }, "human"), h("option", { value: "agent" }, "agent"));
  const status = h("span", { class: "muted", id: "invite-status" });
  const node = h("form", {
    class: "invite", id: "invite", hidden: true,
    onsubmit: async (event) => {
      event.preventDefault();
      const who = id.value.trim();
      if (!who) return;
      if (members.some((p) => p.id === who)) {
        status.textContent = `${who} is a participant already`;
        status.className = "error";
        return;
      }
      const participants = [...members, { id: who, kind: kind.value, role: role.value }];
      const envelope = { kind: "task", payload: { participants } };
      if (await post([{ data: envelope, mediaType: EVENT_TYPE }], status, "inviting…")) {
        status.textContent = `invited ${who} as ${role.value}`;
        id.value = "";
      }
    },
  }, h("div", { class: "muted" }, "Invite"), id, role, kind, h("button", { type: "submit", id: "invite-send" }, "Invite"), status);

  // Shown to an admin of a conversation that has not ended.
  function update(harness, me, ended) {
    members = (harness?.participants || []).map((p) => ({ id: p.id, kind: p.kind, role: p.role }));
    const admin = Boolean(me) && members.some((p) => p.id === me && p.role === "admin");
    node.hidden = !admin || ended;
  }

  return { node, update };
}
