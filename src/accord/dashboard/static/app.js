// The dashboard's entry: who is signed in, and which page the address names
// (#/tasks, #/task/<id>, #/raw/<id>, #/activity, #/health; any other address is answered "no such page").

import { clear, h } from "./dom.js";
import { HttpError, card, getJson, session } from "./net.js";
import { activityPage } from "./activity.js";
import { healthPage } from "./health.js";
import { rawPage } from "./raw.js";
import { taskPage } from "./task.js";
import { tasksPage } from "./tasks.js";

const main = document.getElementById("main");
let agentCard = null;
let who = null; // the session's answer: identity, tenant, actors, open mode
let current = null; // the page shown: { stop() }

async function start() {
  agentCard = await card().catch(() => null);
  if (agentCard?.name) document.getElementById("agent-name").textContent = agentCard.name;
  window.addEventListener("hashchange", route);
  await signIn();
}

async function signIn() {
  try {
    who = await getJson("session");
  } catch (error) {
    if (error instanceof HttpError && (error.status === 401 || error.status === 403)) {
      showSignIn(error.status === 401 ? "" : error.message);
      return;
    }
    clear(main).append(h("p", { class: "error" }, `Cannot reach the server: ${error.message}`));
    return;
  }
  showWho();
  route();
}

function schemes() {
  const declared = Object.keys(agentCard?.securitySchemes || {});
  return declared.length ? declared : ["bearer", "apiKey"];
}

function showSignIn(problem) {
  stopPage();
  const saved = session.load();
  const kinds = schemes();
  const form = h("form", {
    onsubmit: async (event) => {
      event.preventDefault();
      const data = new FormData(event.target);
      session.save({ token: data.get("token").trim(), kind: data.get("kind") });
      await signIn();
    },
  },
  h("label", {}, "Credentials ", h("input", {
    name: "token", type: "password", required: true, autocomplete: "off",
    placeholder: "a token or an API key", value: saved.token || "",
  })),
  h("label", {}, "Sent as ", h("select", { name: "kind" },
    kinds.map((kind) => h("option", { value: kind, selected: kind === saved.kind },
      kind === "apiKey" ? "API key (X-API-Key)" : "bearer token (Authorization)")))),
  h("button", { class: "primary", type: "submit" }, "Sign in"),
  problem || saved.token ? h("p", { class: "error" }, problem || "Those credentials were refused.") : null,
  h("p", { class: "muted" },
    "The credentials stay in this browser tab (session storage) and are sent with each request, as any API client sends them."));
  clear(main).append(h("section", { class: "panel signin" }, h("h1", {}, "Sign in"), form));
  clear(document.getElementById("who"));
}

function showWho() {
  const box = clear(document.getElementById("who"));
  if (who.openMode) {
    const saved = session.load();
    box.append(
      h("span", { title: "no credentials configured: everything is visible" }, "open mode"),
      h("input", {
        id: "participant", size: 10, placeholder: "participant", value: saved.participant || "",
        title: "who you speak as in conversations (X-Participant-Id)",
        onchange: (event) => session.save({ participant: event.target.value.trim() }),
      }),
      h("input", {
        id: "tenant", size: 8, placeholder: "tenant", value: saved.tenant || "",
        title: "the tenant to show (the API's path prefix; empty: the default tenant)",
        onchange: (event) => {
          session.save({ tenant: event.target.value.trim() });
          route();
        },
      }));
    return;
  }
  box.append(
    h("span", {}, who.identity, who.tenant ? ` @ ${who.tenant}` : ""),
    h("button", { onclick: () => { session.forget(); showSignIn(""); } }, "Sign out"));
}

function stopPage() {
  if (current) current.stop();
  current = null;
}

function route() {
  if (!who) return;
  stopPage();
  const hash = location.hash || "#/tasks";
  const [path, query] = hash.slice(1).split("?");
  const params = new URLSearchParams(query || "");
  for (const link of document.querySelectorAll("#nav a")) {
    link.classList.toggle("current", path.startsWith(`/${link.dataset.page}`));
  }
  const context = { main: clear(main), card: agentCard, who, params };
  const taskId = path.startsWith("/task/") ? decodeURIComponent(path.slice(6)) : "";
  const rawId = path.startsWith("/raw/") ? decodeURIComponent(path.slice(5)) : "";
  if (taskId) current = taskPage(context, taskId);
  else if (rawId) current = rawPage(context, rawId);
  else if (path === "/health") current = healthPage(context);
  else if (path === "/activity") current = activityPage(context);
  else if (path === "/tasks" || path === "" || path === "/") current = tasksPage(context);
  else notFound(path);
}

// An address the dashboard has no page for: say so (and where the pages are), rather than
// showing some other page as if it were the one asked for.
function notFound(path) {
  const near = /^\/tasks?\/(.+)$/.exec(path);
  const guess = near ? `#/task/${near[1]}` : null;
  main.append(h("section", { class: "panel", id: "not-found" },
    h("h1", {}, "No such page"),
    h("p", {}, "The dashboard has no page at ", h("code", {}, `#${path}`), "."),
    guess ? h("p", {}, "A task's page is ", h("a", { href: guess }, guess), ".") : null,
    h("p", { class: "muted" }, "Its pages: ",
      [["#/tasks", "the tasks"], ["#/task/<task id>", "a task"], ["#/raw/<task id>", "a task's raw exchange"], ["#/activity", "activity"], ["#/health", "health"]]
        .map(([where, what], n) => [n ? ", " : "", h("code", {}, where), ` (${what})`]),
      ".")));
}

start();
