// Building the page: every value is set as text or as a checked attribute, never as markup,
// so nothing an agent or a participant wrote can become part of the page's code.

export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name === "href") node.setAttribute("href", safeHref(value));
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Links go to the dashboard's own pages, or to http(s) addresses; nothing else (javascript:).
export function safeHref(value) {
  const text = String(value);
  if (text.startsWith("#")) return text;
  try {
    const url = new URL(text, location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : "#";
  } catch {
    return "#";
  }
}

// (use append(clear(node), …) rather than the DOM's own node.append, which writes a null or
// an array as text: "null", "[object HTMLSpanElement]")
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function stateBadge(state, subState) {
  return h("span", {},
    h("span", { class: `state ${state}`, "data-state": state }, state),
    subState ? h("span", { class: "substate", "data-sub-state": subState }, `· ${subState}`) : null);
}

export function shortId(id) {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

export function when(iso) {
  if (!iso) return "";
  const then = new Date(iso);
  const seconds = Math.round((Date.now() - then.getTime()) / 1000);
  if (seconds < 60) return `${Math.max(seconds, 0)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return then.toISOString().slice(0, 16).replace("T", " ");
}

export function timeCell(iso) {
  return h("time", { datetime: iso, title: iso }, when(iso));
}

export function participantChips(participants) {
  return (participants || []).map((p) =>
    h("span", { class: "chip" }, p.id, p.role ? h("span", { class: "role" }, ` ${p.role}`) : null));
}
