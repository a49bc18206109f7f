// Files in the compose box: when the card lists the media extension, a file picker whose
// files are uploaded to the server's upload URL (POST /media, as the signed-in caller) as
// soon as they are chosen; the next message sent carries them as url parts (docs/media.md).

import { h } from "./dom.js";
import { headers, tenant } from "./net.js";
import { COMMANDS_URI } from "./parts.js";

// tiny-harness's media extension, a sibling of its commands extension (the one URI the
// page's files spell out: it names an extension, it is never fetched).
export const MEDIA_URI = COMMANDS_URI.replace(/commands\/v1$/, "media/v1");

function uploadPath(card) {
  const found = (card?.capabilities?.extensions || []).find((e) => e.uri === MEDIA_URI);
  if (!found) return null;
  try {
    // The path only: the page talks to the origin it came from.
    return new URL(found.params?.uploadUrl || "/media", location.href).pathname;
  } catch {
    return "/media";
  }
}

// The control for a compose box, or null when the agent takes no files: {element, take()}
// where take() gives the uploaded files' parts (and forgets them).
export function attachments(card, status) {
  const path = uploadPath(card);
  if (!path) return null;
  let parts = [];
  const names = h("span", { class: "muted", id: "compose-files" });
  const picker = h("input", { type: "file", id: "compose-file", multiple: true });

  function show() {
    names.textContent = parts.length ? `attached: ${parts.map((p) => p.filename).join(", ")}` : "";
  }

  async function upload(file) {
    const query = new URLSearchParams({ filename: file.name });
    if (tenant()) query.set("tenant", tenant());
    const response = await fetch(`${path}?${query}`, {
      method: "POST",
      headers: headers({ "Content-Type": file.type || "application/octet-stream" }),
      body: file,
    });
    let body = {};
    try {
      body = await response.json();
    } catch {
      /* not JSON */
    }
    if (!response.ok) throw new Error(body.error?.message || `${response.status} ${response.statusText}`);
    return { url: body.url, filename: body.filename, mediaType: body.mediaType };
  }

  picker.addEventListener("change", async () => {
    const chosen = [...picker.files];
    picker.value = "";
    for (const file of chosen) {
      status.textContent = `uploading ${file.name}…`;
      status.className = "muted";
      try {
        parts.push(await upload(file));
        status.textContent = "";
      } catch (error) {
        status.textContent = `${file.name}: ${error.message}`;
        status.className = "error";
      }
      show();
    }
  });

  return {
    element: h("div", { class: "attach" }, h("label", {}, "Attach ", picker), names),
    count: () => parts.length,
    take() {
      const taken = parts;
      parts = [];
      show();
      return taken;
    },
    restore(taken) {
      parts = [...taken, ...parts];
      show();
    },
  };
}

// A link to a file of this server (/media/…) is fetched with the session's credentials (a
// plain link would carry none) and handed to the browser as a download of its name.
document.addEventListener("click", async (event) => {
  const link = event.target.closest?.("a[href]");
  if (!link) return;
  let url;
  try {
    url = new URL(link.href, location.href);
  } catch {
    return;
  }
  if (url.origin !== location.origin || !url.pathname.startsWith("/media/")) return;
  event.preventDefault();
  const response = await fetch(url.pathname + url.search, { headers: headers() });
  if (!response.ok) {
    link.title = `${response.status} ${response.statusText}`;
    return;
  }
  const blob = await response.blob();
  const save = h("a", { download: link.textContent || "file" });
  save.href = URL.createObjectURL(blob); // (h() admits http(s) links only; this one is ours)
  document.body.append(save);
  save.click();
  save.remove();
  setTimeout(() => URL.revokeObjectURL(save.href), 60_000);
});
