"""The ``[harness]`` table of accord's TOML settings.

::

    [harness]
    agent_id = "accord"                            # the harness's own participant id
    model = "scripted:examples/harness/hello.json" # what answers a turn
    models = []                                    # other models a task may choose
    system_prompt = "You are …"                    # or system_prompt_file = "prompt.md"
    delegators = []                                # peers trusted to brief tasks fully

Every error names the setting (and the file, when there is one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accord.harness.models import Model, ScriptedModel

MODEL_KINDS = ("scripted",)


@dataclass(frozen=True, slots=True)
class HarnessSettings:
    agent_id: str = "accord"
    model: str = ""
    models: tuple[str, ...] = ()
    system_prompt: str = ""
    delegators: tuple[str, ...] = ()

    @property
    def selectable(self) -> tuple[str, ...]:
        """The models a task may run on: the default and the allowlist."""
        return tuple(dict.fromkeys((self.model, *self.models)))


def parse(table: dict[str, Any], source: str = "") -> HarnessSettings:
    """The settings of a ``[harness]`` table; ValueError naming the file and setting."""
    where = f"{source}: " if source else ""

    def fail(key: str, problem: str) -> ValueError:
        return ValueError(f"{where}harness.{key}: {problem}")

    known = {"agent_id", "model", "models", "system_prompt", "system_prompt_file", "delegators"}
    for key in table:
        if key not in known:
            raise fail(key, "unknown setting")

    def text(key: str, default: str = "") -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise fail(key, f"expected a string, got {value!r}")
        return value

    def texts(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise fail(key, f"expected a list of strings, got {value!r}")
        return tuple(value)

    agent_id = text("agent_id", "accord")
    if not agent_id:
        raise fail("agent_id", "must not be empty")
    model = text("model")
    if not model:
        raise fail("model", 'required, e.g. model = "scripted:examples/harness/hello.json"')
    prompt = text("system_prompt")
    prompt_file = text("system_prompt_file")
    if prompt and prompt_file:
        raise fail("system_prompt_file", "set system_prompt or system_prompt_file, not both")
    if prompt_file:
        try:
            prompt = Path(prompt_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise fail(
                "system_prompt_file", f"cannot read {prompt_file} ({exc.strerror})"
            ) from None
    settings = HarnessSettings(
        agent_id=agent_id,
        model=model,
        models=texts("models"),
        system_prompt=prompt,
        delegators=texts("delegators"),
    )
    for name in settings.selectable:
        kind = name.partition(":")[0]
        if kind not in MODEL_KINDS:
            raise fail(
                "model" if name == model else "models",
                f"{name!r}: a model is {' or '.join(k + ':…' for k in MODEL_KINDS)}",
            )
    return settings


def build_model(spec: str) -> Model:
    """The model a ``kind:argument`` spec names; ValueError when it cannot be built."""
    kind, _, argument = spec.partition(":")
    if kind == "scripted":
        return ScriptedModel.from_file(argument)
    raise ValueError(f"model {spec!r}: unknown kind {kind!r}")
