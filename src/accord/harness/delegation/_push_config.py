"""The push config a stand-in registers on its remote task, when the agent's card offers
push notifications and ``[harness] push_url`` says where this server is reached: its fixed
id, its URL on our doorbell (accord.harness.delegation._doorbell), a secret token of its own
(the stand-in keeps its hash only), and its deletion once the stand-in is over.

Registration is best effort on top of the stream and the poll, which follow the remote task
either way: an agent that refuses the config is noted on the stand-in (``push.refused``)
and not asked again; one out of reach is asked again on the follow's next pass.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING
from urllib.parse import quote

from accord.client import A2AClientError, Client, ClientError, InternalError
from accord.harness._roster import Roster
from accord.harness.core import _delegation as core
from accord.harness.core import _standin as standin
from accord.harness.core._delegation import OPEN_NAMES, Observed, RemoteState
from accord.harness.delegation._doorbell import PREFIX, digest

if TYPE_CHECKING:
    from accord.harness.delegation._remote import RemoteFollow

log = logging.getLogger("accord.harness.delegation")

# A registration begun this long ago and not finished is taken to have died with its node.
STALE_MS = 60_000
MAX_REASON = 500


def config_id(stand_in: str) -> str:
    """The config's id on the remote task: fixed per stand-in, so that registering it
    again (after a restart, from another node) replaces it instead of adding one."""
    return f"accord-follow-{stand_in}"


def url_for(base_url: str, stand_in: str) -> str:
    return base_url.rstrip("/") + PREFIX + quote(stand_in, safe="")


def new_token() -> tuple[str, str]:
    """A new secret token and its hash: the token goes to the agent once, the hash is what
    the stand-in keeps."""
    token = secrets.token_urlsafe(32)
    return token, digest(token)


def wanted(client: Client, remote: RemoteState, base_url: str) -> bool:
    """Whether a push config is to be registered now: a push URL of ours, a remote task
    still open (and not done for its parent), none registered or refused yet, and a card
    that offers push."""
    push = remote.push
    return (
        bool(base_url)
        and bool(remote.task_id)
        and remote.state in OPEN_NAMES
        and core.meaning("delegated", Observed(remote.state, remote.sub_state)) != "ended"
        and (push is None or not (push.registered or push.refused))
        and bool(client.card.capabilities.push_notifications)
    )


async def register(
    follow: RemoteFollow, client: Client, remote: RemoteState, base_url: str
) -> None:
    """Registers the stand-in's push config on its remote task (once: the token's hash is
    stored first, so that another node sees the registration under way and leaves it).
    ClientError and OSError when the agent cannot be reached: the caller tries again."""
    if not wanted(client, remote, base_url):
        return
    token, token_hash = new_token()
    now = follow.follower.engine.clock()
    await follow.change(standin.push_begun(token_hash, now, STALE_MS))
    current = await follow.remote_now()
    if current is None or current.push is None or current.push.token_sha256 != token_hash:
        return  # (another registration is under way, or the stand-in is over)
    url = url_for(base_url, follow.stand_in)
    try:
        await client.create_push_config(
            remote.task_id, url, config_id=config_id(follow.stand_in), token=token
        )
    except A2AClientError as exc:
        if isinstance(exc, InternalError):
            raise
        reason = str(exc).replace(token, "[redacted]")[:MAX_REASON]
        log.info("sub-task %s: %s refused its push config: %s", follow.stand_in, remote.agent,
                 reason)  # fmt: skip
        await follow.change(standin.push_ended(token_hash, reason or type(exc).__name__))
        return
    await follow.change(standin.push_ended(token_hash))


async def unregister(roster: Roster, stand_in: str, remote: RemoteState) -> None:
    """The config deleted on the remote task, once the stand-in is over: best effort (an
    agent gone, or that forgot the task, is fine: it sends nothing more for a task over)."""
    push = remote.push
    if push is None or push.refused or not remote.task_id or roster.get(remote.agent) is None:
        return
    try:
        async with roster.connect(remote.agent) as client:
            await client.delete_push_config(remote.task_id, config_id(stand_in))
    except (A2AClientError, ClientError, OSError, RuntimeError) as exc:
        log.info("sub-task %s: its push config on %s was not deleted (%s)", stand_in,
                 remote.agent, type(exc).__name__)  # fmt: skip
