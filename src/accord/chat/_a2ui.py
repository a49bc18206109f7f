"""A2UI surfaces in the terminal: the task's ``a2ui`` artifacts folded into its surfaces,
each drawn as a readable form — its text, every control numbered (choices with their numbered
options, fields with their values, buttons) — and ``/ui`` to fill and press them:

- ``/ui``: the forms again;
- ``/ui N VALUE``: field N takes VALUE (a text, a number, a date); a choice takes the numbers
  (or values) of its options, ``/ui 1 2`` or ``/ui 1 1,3``;
- ``/ui N``: press button N (its action goes to the task), or flip check box N.

Everything in a surface was written by a model: it is shown as plain text (control
characters replaced), every walk of its tree is bounded, and a data-model path never reaches
past the model's own dicts and lists.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from accord.harness.a2ui import A2UI_MEDIA_TYPE, A2UI_VERSION, is_a2ui_artifact
from accord.wire import UNSET, Artifact, Part

MAX_DEPTH = 32
MAX_NODES = 500
MAX_TEXT = 2_000  # characters of one value shown
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
INPUTS = ("TextField", "CheckBox", "ChoicePicker", "Slider", "DateTimeInput", "Button")


def clean(value: Any) -> str:
    """A model's text as the terminal shows it: no control characters (escape sequences),
    bounded."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = _CONTROL.sub("?", text)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


def _segments(pointer: str) -> list[str]:
    return [s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[1:] if s != ""]


def read(model: Any, pointer: str) -> Any:
    here = model
    for key in _segments(pointer):
        if isinstance(here, dict) and key in here:
            here = here[key]
        elif isinstance(here, list) and key.isdigit() and int(key) < len(here):
            here = here[int(key)]
        else:
            return None
    return here


def write(model: dict[str, Any], pointer: str, value: Any, remove: bool = False) -> dict[str, Any]:
    """``model`` with ``value`` at ``pointer`` (the whole model at ``/``)."""
    path = _segments(pointer)
    if not path:
        return {} if remove or not isinstance(value, dict) else value
    here: Any = model
    for key in path[:-1]:
        if not isinstance(here, dict):
            return model
        if not isinstance(here.get(key), dict | list):
            here[key] = {}
        here = here[key]
        if isinstance(here, list):
            return model  # (a list is filled whole, never through an index here)
    if isinstance(here, dict):
        if remove:
            here.pop(path[-1], None)
        else:
            here[path[-1]] = value
    return model


def _absolute(path: Any, scope: str) -> str:
    text = str(path)
    return text if text.startswith("/") else f"{scope}/{text}"


@dataclass
class Surface:
    id: str
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def resolve(self, value: Any, scope: str = "") -> Any:
        if isinstance(value, dict):
            if isinstance(value.get("path"), str):
                return read(self.data, _absolute(value["path"], scope))
            if value.get("call") == "formatString" and isinstance(value.get("args"), dict):
                return self.resolve(value["args"].get("value"), scope)
            return None
        return value

    def text(self, value: Any, scope: str = "") -> str:
        found = self.resolve(value, scope)
        return "" if found is None else clean(found)


@dataclass(frozen=True, slots=True)
class Control:
    """A numbered control of a drawn form."""

    surface: str
    component: str
    scope: str


@dataclass
class Surfaces:
    """The task's surfaces, as its artifacts left them, and the controls the last drawing
    numbered."""

    live: dict[str, Surface] = field(default_factory=dict)
    controls: list[Control] = field(default_factory=list)
    _applied: set[str] = field(default_factory=set)  # artifact ids folded in

    def see(self, artifact: Artifact) -> bool:
        """Fold an ``a2ui`` artifact in (once); False: not one."""
        if not is_a2ui_artifact(artifact):
            return False
        if artifact.artifact_id in self._applied:
            return True
        self._applied.add(artifact.artifact_id)
        for part in artifact.parts:
            if part.media_type == A2UI_MEDIA_TYPE and isinstance(part.data, dict):
                self._apply(part.data)
        return True

    def _apply(self, message: dict[str, Any]) -> None:
        for kind in ("createSurface", "updateComponents", "updateDataModel", "deleteSurface"):
            body = message.get(kind)
            if isinstance(body, dict) and isinstance(body.get("surfaceId"), str):
                break
        else:
            return
        surface_id = body["surfaceId"]
        if kind == "createSurface":
            self.live.setdefault(surface_id, Surface(surface_id))
            return
        surface = self.live.get(surface_id)
        if surface is None:
            return
        if kind == "deleteSurface":
            del self.live[surface_id]
        elif kind == "updateComponents":
            for component in body.get("components") or []:
                if isinstance(component, dict) and isinstance(component.get("id"), str):
                    surface.components[component["id"]] = component
        else:
            given = body.get("path")
            pointer = given if isinstance(given, str) else "/"
            surface.data = write(surface.data, pointer, body.get("value"), "value" not in body)

    # --- drawing --------------------------------------------------------------------------------

    def draw(self) -> str:
        """Every live surface as a form; the controls numbered from 1 across them."""
        self.controls = []
        blocks = []
        for surface in self.live.values():
            lines: list[str] = []
            budget = [MAX_NODES]
            if "root" in surface.components:
                self._draw(surface, "root", "", 0, frozenset(), lines, budget)
            else:
                lines.append("(no root component yet)")
            body = "\n".join(f"│ {line}" for line in lines)
            blocks.append(f"┌ {clean(surface.id)}\n{body}")
        if not blocks:
            return "(no surfaces)"
        hint = "└ /ui N VALUE fills control N, /ui N presses button N"
        return "\n".join(blocks) + "\n" + hint

    def _draw(
        self,
        surface: Surface,
        id: str,
        scope: str,
        depth: int,
        path: frozenset[str],
        lines: list[str],
        budget: list[int],
    ) -> str:
        """Draw component ``id``: block components add lines; an inline one (a button's
        label) returns its text."""
        component = surface.components.get(id)
        budget[0] -= 1
        if component is None or depth > MAX_DEPTH or id in path or budget[0] < 0:
            return ""
        inner = path | {id}
        kind = component.get("component")

        def child(child_id: Any, child_scope: str = scope) -> str:
            return self._draw(surface, str(child_id), child_scope, depth + 1, inner, lines, budget)

        if kind == "Text":
            text = surface.text(component.get("text"), scope)
            variant = component.get("variant")
            lines.append(text.upper() if variant in ("h1", "h2") else text)
            return text
        if kind in ("Row", "Column", "List"):
            for child_id in self._children(surface, component.get("children"), scope):
                child(*child_id)
            return ""
        if kind == "Card":
            child(component.get("child"))
            return ""
        if kind == "Tabs":
            for tab in component.get("tabs") or []:
                if isinstance(tab, dict):
                    lines.append(f"— {surface.text(tab.get('title'), scope)} —")
                    child(tab.get("child"))
            return ""
        if kind == "Modal":
            child(component.get("trigger"))
            child(component.get("content"))
            return ""
        if kind == "Divider":
            lines.append("─" * 20)
            return ""
        if kind in ("Image", "Video", "AudioPlayer"):
            what = {"Image": "image", "Video": "video", "AudioPlayer": "audio"}[kind]
            label = surface.text(component.get("description"), scope)
            url = surface.text(component.get("url"), scope)
            shown = url if url.startswith("https://") else ""
            lines.append(f"[{what}: {label or shown or '(no description)'}]")
            return ""
        if kind in INPUTS:
            self.controls.append(Control(surface.id, id, scope))
            number = len(self.controls)
            lines.append(f"[{number}] {self._control(surface, component, scope)}")
            return ""
        if kind == "Icon":
            name = component.get("name")
            return f"[{clean(name)}]" if isinstance(name, str) else ""
        return ""

    def _children(self, surface: Surface, spec: Any, scope: str) -> list[tuple[str, str]]:
        if isinstance(spec, list):
            return [(str(c), scope) for c in spec]
        if isinstance(spec, dict) and isinstance(spec.get("componentId"), str):
            base = _absolute(spec.get("path", ""), scope)
            items = read(surface.data, base)
            count = min(len(items), 200) if isinstance(items, list) else 0
            return [(spec["componentId"], f"{base}/{n}") for n in range(count)]
        return []

    def _control(self, surface: Surface, c: dict[str, Any], scope: str) -> str:
        kind = c["component"]
        label = surface.text(c.get("label"), scope)
        value = surface.resolve(c.get("value"), scope)
        if kind == "Button":
            # (its label: its child's text or icon)
            inner = surface.components.get(str(c.get("child"))) or {}
            text = ""
            if inner.get("component") == "Text":
                text = surface.text(inner.get("text"), scope)
            elif inner.get("component") == "Icon" and isinstance(inner.get("name"), str):
                text = clean(inner["name"])
            return f"<{text or 'button'}>"
        if kind == "CheckBox":
            return f"[{'x' if value is True else ' '}] {label}"
        if kind == "ChoicePicker":
            chosen = {str(v) for v in value} if isinstance(value, list) else set()
            many = c.get("variant") == "multipleSelection"
            marks = ("[x]", "[ ]") if many else ("(•)", "( )")
            options = [
                f"{marks[0] if str(o.get('value')) in chosen else marks[1]} {n} "
                f"{surface.text(o.get('label'), scope)}"
                for n, o in enumerate(c.get("options") or [], 1)
                if isinstance(o, dict)
            ]
            return f"{label or 'choose'}: " + "  ".join(options)
        shown = "" if value is None else clean(value)
        if c.get("variant") == "obscured":
            shown = "•" * len(shown)
        return f"{label or kind}: {shown or '___'}"

    # --- acting ---------------------------------------------------------------------------------

    def act(self, number: int, value: str) -> tuple[str, Part | None]:
        """``/ui number value``: what it did, and the action part to send (None: nothing
        to send). Raises ValueError naming what is wrong."""
        if not 1 <= number <= len(self.controls):
            raise ValueError(f"no control {number} (the forms number 1 to {len(self.controls)})")
        control = self.controls[number - 1]
        surface = self.live.get(control.surface)
        component = surface.components.get(control.component) if surface else None
        if surface is None or component is None:
            raise ValueError(f"control {number} is gone; /ui draws the forms again")
        kind = component["component"]
        if kind == "Button":
            return f"pressed {number}", self._press(surface, component, control.scope)
        binding = component.get("value")
        if not (isinstance(binding, dict) and isinstance(binding.get("path"), str)):
            raise ValueError(f"control {number} is not bound to the surface's data")
        pointer = _absolute(binding["path"], control.scope)
        if kind == "CheckBox":
            new: Any = not bool(read(surface.data, pointer)) if not value else value == "yes"
        elif kind == "ChoicePicker":
            new = self._choose(component, value, number)
        elif kind == "Slider":
            try:
                new = float(value)
            except ValueError:
                raise ValueError(f"control {number} takes a number") from None
        else:
            new = value
        surface.data = write(surface.data, pointer, new)
        return f"{number} set", None

    @staticmethod
    def _choose(component: dict[str, Any], value: str, number: int) -> list[str]:
        options = [o for o in component.get("options") or [] if isinstance(o, dict)]
        picked: list[str] = []
        for token in re.split(r"[,\s]+", value.strip()):
            if not token:
                continue
            if token.isdigit() and 1 <= int(token) <= len(options):
                picked.append(str(options[int(token) - 1].get("value")))
            elif any(str(o.get("value")) == token for o in options):
                picked.append(token)
            else:
                raise ValueError(f"control {number} has no option {token!r}")
        if not picked:
            raise ValueError(f"/ui {number} OPTION: the number of an option")
        if component.get("variant") != "multipleSelection" and len(picked) > 1:
            raise ValueError(f"control {number} takes one option")
        return picked

    @staticmethod
    def _press(surface: Surface, component: dict[str, Any], scope: str) -> Part | None:
        action = component.get("action")
        event = action.get("event") if isinstance(action, dict) else None
        if not isinstance(event, dict) or not isinstance(event.get("name"), str):
            return None  # (a function call: nothing for the task)
        given = event.get("context")
        context: dict[str, Any] = given if isinstance(given, dict) else {}
        resolved = {key: surface.resolve(value, scope) for key, value in context.items()}
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        data = {
            "version": A2UI_VERSION,
            "action": {
                "name": event["name"],
                "surfaceId": surface.id,
                "sourceComponentId": component["id"],
                "timestamp": now,
                "context": resolved,
            },
        }
        return Part(data=data, media_type=A2UI_MEDIA_TYPE)


def part_text(part: Part) -> str | None:
    """A participant's A2UI message as a line: ``[ui action confirm on refund-form]``."""
    if part.media_type != A2UI_MEDIA_TYPE or part.data is UNSET:
        return None
    data = part.data if isinstance(part.data, dict) else {}
    action = data.get("action")
    if isinstance(action, dict):
        return f"[ui action {clean(action.get('name'))} on {clean(action.get('surfaceId'))}]"
    return "[ui message]"


def command(text: str) -> tuple[int, str] | None:
    """``/ui N VALUE`` as (N, VALUE); (0, "") for ``/ui`` alone; None: not ``/ui``."""
    if text != "/ui" and not text.startswith("/ui "):
        return None
    rest = text[3:].strip()
    if not rest:
        return 0, ""
    head, _, value = rest.partition(" ")
    if not head.isdigit():
        raise ValueError("/ui N VALUE: N is the number of a control")
    return int(head), value.strip()


__all__ = ["Surfaces", "clean", "command", "part_text"]
