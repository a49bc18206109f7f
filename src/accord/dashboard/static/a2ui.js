// A2UI 0.9 surfaces of the basic catalog (artifacts named "a2ui", parts of media type
// application/a2ui+json), rendered as the page's own elements, and their buttons' actions
// sent back to the task.
//
// Everything in a surface was written by a model: it is untrusted. Text is set as text, never
// as markup; class names come from fixed tables; an image loads only from a data: URL of a
// raster type (the page's CSP allows no other origin), an https address is a link a person
// chooses to open; a data model path never reaches an object's prototype; every walk of the
// component tree is bounded (depth, count, cycles).

import { clear, h, safeHref } from "./dom.js";

export const A2UI_TYPE = "application/a2ui+json";
const VERSION = "v0.9.1";
const MAX_DEPTH = 32;
const MAX_NODES = 1000;
const FORBIDDEN = new Set(["__proto__", "prototype", "constructor"]);
const DATA_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$/;
const TEXT_TAGS = { h1: "h3", h2: "h4", h3: "h5", h4: "h6", h5: "h6", caption: "small", body: "p" };
const VARIANTS = new Set(["default", "primary", "borderless"]);
const JUSTIFY = new Set(["start", "center", "end", "spaceAround", "spaceBetween", "spaceEvenly", "stretch"]);
const ALIGN = new Set(["start", "center", "end", "stretch"]);

// (its styles, from this server like every file of the page)
if (!document.querySelector('link[href="a2ui.css"]')) {
  document.head.append(h("link", { rel: "stylesheet", href: "a2ui.css" }));
}

export function isA2ui(artifact) {
  return artifact?.name === "a2ui" && String(artifact.artifactId || "").startsWith("a2ui:");
}

// What an artifact's messages do, in one line for the timeline.
export function summary(artifact) {
  const said = (artifact.parts || []).map((part) => {
    const kind = Object.keys(part.data || {}).find((k) => k !== "version") || "?";
    const body = part.data?.[kind];
    return `${kind} ${String(body?.surfaceId ?? "").slice(0, 128)}`;
  });
  return `ui ${String(artifact.artifactId).slice(0, 40)}: ${said.join(", ")}`;
}

// --- the data model -------------------------------------------------------------------------

function segments(pointer) {
  const parts = String(pointer || "/").split("/").slice(1).filter((s) => s !== "")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  return parts.some((s) => FORBIDDEN.has(s)) ? null : parts;
}

function own(object, key) {
  return object !== null && typeof object === "object" && Object.prototype.hasOwnProperty.call(object, key);
}

function read(model, pointer) {
  const path = segments(pointer);
  if (!path) return undefined;
  let here = model;
  for (const key of path) {
    if (!own(here, key)) return undefined;
    here = here[key];
  }
  return here;
}

function write(surface, pointer, value, remove) {
  const path = segments(pointer);
  if (!path) return;
  if (!path.length) {
    surface.data = remove || value === null || typeof value !== "object" ? {} : value;
    return;
  }
  let here = surface.data;
  for (const key of path.slice(0, -1)) {
    if (!own(here, key) || here[key] === null || typeof here[key] !== "object") here[key] = {};
    here = here[key];
  }
  const last = path[path.length - 1];
  if (remove) delete here[last];
  else here[last] = value;
}

// A path relative to a template's item (no leading "/") is read under that item.
function absolute(path, scope) {
  const text = String(path ?? "");
  return text.startsWith("/") ? text : `${scope}/${text}`;
}

function resolve(value, surface, scope) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    if (typeof value.path === "string") return read(surface.data, absolute(value.path, scope));
    if (value.call === "formatString") return resolve(value.args?.value, surface, scope);
    return undefined; // (other functions are not evaluated here)
  }
  return value;
}

function text(value, surface, scope) {
  const found = resolve(value, surface, scope);
  if (found === undefined || found === null) return "";
  return typeof found === "object" ? JSON.stringify(found) : String(found);
}

// --- the renderer ---------------------------------------------------------------------------

export function a2uiPanel({ send }) {
  const surfaces = new Map(); // surface id -> { id, components: Map, data, node }
  const list = h("div", { class: "a2ui-surfaces", id: "a2ui" });
  const status = h("span", { class: "muted", id: "a2ui-status" });
  const node = h("section", { class: "panel a2ui", hidden: true },
    h("h2", {}, "Surfaces"), list, h("div", { class: "actions" }, status));

  function apply(message) {
    if (!message || typeof message !== "object") return;
    if (message.createSurface) {
      const id = String(message.createSurface.surfaceId ?? "");
      if (!id || surfaces.has(id)) return;
      const shown = h("div", { class: "a2ui-surface", "data-surface-id": id });
      surfaces.set(id, { id, components: new Map(), data: {}, node: shown });
      list.append(shown);
    } else if (message.updateComponents) {
      const surface = surfaces.get(String(message.updateComponents.surfaceId ?? ""));
      if (!surface) return;
      for (const component of message.updateComponents.components || []) {
        if (component && typeof component.id === "string") surface.components.set(component.id, component);
      }
    } else if (message.updateDataModel) {
      const body = message.updateDataModel;
      const surface = surfaces.get(String(body.surfaceId ?? ""));
      if (!surface) return;
      write(surface, body.path || "/", body.value, !("value" in body));
    } else if (message.deleteSurface) {
      const surface = surfaces.get(String(message.deleteSurface.surfaceId ?? ""));
      if (!surface) return;
      surface.node.remove();
      surfaces.delete(surface.id);
    }
  }

  // An artifact's messages, in order; then every surface is drawn again from its state.
  function update(artifact) {
    for (const part of artifact.parts || []) {
      if (part.mediaType === A2UI_TYPE) apply(part.data);
    }
    for (const surface of surfaces.values()) draw(surface);
    node.hidden = surfaces.size === 0;
  }

  function draw(surface) {
    const budget = { nodes: 0 };
    clear(surface.node).append(
      surface.components.has("root") ? render(surface, "root", "", 0, new Set(), budget)
        : h("p", { class: "muted" }, "(no root component yet)"));
  }

  function render(surface, id, scope, depth, path, budget) {
    const component = surface.components.get(id);
    if (!component || depth > MAX_DEPTH || path.has(id) || ++budget.nodes > MAX_NODES) return null;
    const inner = new Set(path).add(id);
    const child = (childId, childScope = scope) => render(surface, String(childId), childScope, depth + 1, inner, budget);
    const drawn = draw1(surface, component, scope, child);
    if (drawn) {
      drawn.dataset.componentId = id;
      drawn.classList.add("a2ui-c", `a2ui-${String(component.component).toLowerCase().replace(/[^a-z]/g, "")}`);
      const label = component.accessibility?.label;
      if (label !== undefined) drawn.setAttribute("aria-label", text(label, surface, scope));
    }
    return drawn;
  }

  function children(surface, spec, scope, child) {
    if (Array.isArray(spec)) return spec.map((id) => child(id));
    if (spec && typeof spec === "object" && typeof spec.componentId === "string") {
      const items = read(surface.data, absolute(spec.path, scope));
      const count = Array.isArray(items) ? Math.min(items.length, 200) : 0;
      const out = [];
      for (let i = 0; i < count; i++) out.push(child(spec.componentId, `${absolute(spec.path, scope)}/${i}`));
      return out;
    }
    return [];
  }

  function field(surface, component, scope, make) {
    const binding = component.value;
    const bound = binding && typeof binding === "object" && typeof binding.path === "string"
      ? absolute(binding.path, scope) : null;
    const current = resolve(binding, surface, scope);
    return make(current, (value) => { if (bound) write(surface, bound, value, false); });
  }

  function draw1(surface, c, scope, child) {
    switch (c.component) {
      case "Text": {
        const tag = TEXT_TAGS[c.variant] || "p";
        return h(tag, {}, text(c.text, surface, scope));
      }
      case "Image": return image(text(c.url, surface, scope), text(c.description, surface, scope));
      case "Icon": return h("span", { class: "icon" }, typeof c.name === "string" ? `[${c.name}]` : "[icon]");
      case "Video":
      case "AudioPlayer": {
        const url = text(c.url, surface, scope);
        const label = text(c.description, surface, scope) || `${c.component === "Video" ? "video" : "audio"}`;
        return https(url) ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label) : h("span", {}, label);
      }
      case "Row":
      case "Column":
      case "List": {
        const row = c.component === "Row" || (c.component === "List" && c.direction === "horizontal");
        const box = h("div", { class: row ? "a2ui-row" : "a2ui-column" }, children(surface, c.children, scope, child));
        if (JUSTIFY.has(c.justify)) box.dataset.justify = c.justify;
        if (ALIGN.has(c.align)) box.dataset.align = c.align;
        return box;
      }
      case "Card": return h("div", { class: "a2ui-card" }, child(c.child));
      case "Divider": return h("hr", {});
      case "Tabs": {
        const tabs = Array.isArray(c.tabs) ? c.tabs.slice(0, 50) : [];
        const body = h("div", {});
        const bar = h("div", { class: "a2ui-tabs", role: "tablist" });
        const show = (i) => {
          clear(body).append(child(tabs[i].child));
          [...bar.children].forEach((b, j) => b.setAttribute("aria-selected", String(i === j)));
        };
        tabs.forEach((tab, i) => bar.append(h("button", { role: "tab", onclick: () => show(i) }, text(tab.title, surface, scope))));
        const box = h("div", {}, bar, body);
        if (tabs.length) show(0);
        return box;
      }
      case "Modal": return h("details", {}, h("summary", {}, child(c.trigger)), child(c.content));
      case "Button": {
        const variant = VARIANTS.has(c.variant) ? c.variant : "default";
        return h("button", {
          class: variant === "primary" ? "primary" : variant === "borderless" ? "borderless" : null,
          type: "button",
          onclick: () => act(surface, c, scope),
        }, child(c.child));
      }
      case "TextField": return field(surface, c, scope, (value, set) => {
        const long = c.variant === "longText";
        const input = long ? h("textarea", {}) : h("input", {
          type: c.variant === "number" ? "number" : c.variant === "obscured" ? "password" : "text",
        });
        input.value = value === undefined || value === null ? "" : String(value);
        input.addEventListener("input", () => set(input.value));
        return h("label", { class: "a2ui-field" }, h("span", {}, text(c.label, surface, scope)), input);
      });
      case "CheckBox": return field(surface, c, scope, (value, set) => {
        const input = h("input", { type: "checkbox" });
        input.checked = value === true;
        input.addEventListener("change", () => set(input.checked));
        return h("label", { class: "a2ui-check" }, input, text(c.label, surface, scope));
      });
      case "ChoicePicker": return field(surface, c, scope, (value, set) => {
        const many = c.variant === "multipleSelection";
        const chosen = new Set(Array.isArray(value) ? value.map(String) : []);
        const name = `${surface.id}/${c.id}/${scope}`;
        const options = (Array.isArray(c.options) ? c.options.slice(0, 200) : []).map((option) => {
          const input = h("input", { type: many ? "checkbox" : "radio", name, value: String(option?.value ?? "") });
          input.checked = chosen.has(input.value);
          input.addEventListener("change", () => {
            if (many) {
              if (input.checked) chosen.add(input.value); else chosen.delete(input.value);
            } else {
              chosen.clear();
              chosen.add(input.value);
            }
            set([...chosen]);
          });
          return h("label", { class: "a2ui-option" }, input, text(option?.label, surface, scope));
        });
        return h("fieldset", { class: "a2ui-choice" }, c.label !== undefined ? h("legend", {}, text(c.label, surface, scope)) : null, options);
      });
      case "Slider": return field(surface, c, scope, (value, set) => {
        const input = h("input", { type: "range", min: Number(c.min ?? 0), max: Number(c.max ?? 100) });
        input.value = String(Number(value ?? c.min ?? 0));
        input.addEventListener("input", () => set(Number(input.value)));
        return h("label", { class: "a2ui-field" }, h("span", {}, text(c.label, surface, scope)), input);
      });
      case "DateTimeInput": return field(surface, c, scope, (value, set) => {
        const type = c.enableDate === false ? "time" : c.enableTime ? "datetime-local" : "date";
        const input = h("input", { type });
        input.value = value === undefined || value === null ? "" : String(value);
        input.addEventListener("change", () => set(input.value));
        return h("label", { class: "a2ui-field" }, h("span", {}, text(c.label, surface, scope)), input);
      });
      default: return h("span", { class: "muted" }, `(${String(c.component).slice(0, 40)})`);
    }
  }

  function act(surface, component, scope) {
    const action = component.action;
    if (action?.functionCall?.call === "openUrl") {
      const url = String(action.functionCall.args?.url ?? "");
      if (https(url)) window.open(safeHref(url), "_blank", "noopener,noreferrer");
      return;
    }
    const event = action?.event;
    if (!event || typeof event.name !== "string") return;
    const context = {};
    for (const [key, value] of Object.entries(event.context || {})) {
      if (FORBIDDEN.has(key)) continue;
      const found = resolve(value, surface, scope);
      context[key] = found === undefined ? null : found;
    }
    send([{
      data: {
        version: VERSION,
        action: {
          name: event.name,
          surfaceId: surface.id,
          sourceComponentId: component.id,
          timestamp: new Date().toISOString(),
          context,
        },
      },
      mediaType: A2UI_TYPE,
    }], status);
  }

  return { node, update };
}

function https(url) {
  try {
    return new URL(url).protocol === "https:";
  } catch {
    return false;
  }
}

// A raster data: image is shown; an https image is a link (the page loads nothing from
// another origin); anything else is its description.
function image(url, description) {
  if (DATA_IMAGE.test(url) && url.length <= 2_000_000) {
    const img = h("img", { alt: description || "image" });
    img.src = url;
    return img;
  }
  const label = `image: ${description || url}`;
  return https(url) ? h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, label)
    : h("span", { class: "muted" }, label);
}
