"""Making harness agents: from the ``[harness]`` settings, or around an author's turn
function."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from accord.harness._agent import HarnessAgent
from accord.harness._settings import HarnessSettings, missing_keys
from accord.harness.models import FunctionModel, Model, TurnFunction
from accord.harness.plugins._loader import Loading, load_plugins
from accord.push import AddressPolicy, Guard

FUNCTION_MODEL = "function"

log = logging.getLogger("accord.harness")


def conversation_agent(turn: TurnFunction, *, agent_id: str = "accord") -> HarnessAgent:
    """A harness agent whose every turn is answered by ``turn(conversation)``."""
    settings = HarnessSettings(agent_id=agent_id, model=FUNCTION_MODEL)
    return HarnessAgent(settings, {FUNCTION_MODEL: FunctionModel(turn)})


def from_settings(
    settings: HarnessSettings, models: Mapping[str, Model] | None = None
) -> HarnessAgent:
    """The harness agent of ``accord serve --agent harness``; its models (those ``models``
    does not give) are built and its plugins loaded now, so that one that cannot be (a
    missing script, a bad manifest, a hook that cannot load) stops the server at start
    (ValueError naming it)."""
    agent = HarnessAgent(settings, models)
    agent.check_models()
    for warning in missing_keys(settings):
        log.warning("%s", warning)
    load_plugins(agent, settings.plugins, loading(settings))
    agent.freeze()
    return agent


def loading(settings: HarnessSettings) -> Loading:
    """How plugins load: remote hooks' URLs through the SSRF guard (admitting
    ``hook_allow_hosts``), with ``hook_timeout_s``; a component that cannot load stops the
    start unless ``plugins_strict`` is off; their data under ``plugin_data``."""
    policy = AddressPolicy(
        settings.hook_allow_hosts, subject="remote hooks", setting="harness.hook_allow_hosts"
    )
    return Loading(
        Guard(policy),
        settings.hook_timeout_s,
        strict=settings.plugins_strict,
        data_dir=Path(settings.plugin_data),
    )
