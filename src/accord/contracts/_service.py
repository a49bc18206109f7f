"""Interaction contracts at work on a server: the operators' moves, the notices the other
agent sends, the sweeper, and what a contract's end does to its tasks.

Every move is decided by :mod:`accord.contracts._lifecycle` against the stored record and
written over the version it was decided from; a writer that lost a race decides again against
the record that won (so of an accept and a cancel racing, the loser is refused by the
lifecycle). While a contract is pending, the responder's copy decides: the initiator's
withdrawal is asked of the responder first, so it can never cross the responder's acceptance.
Moves the other agent must learn of are queued on the record (its outbox), delivered at once
and, when the other agent cannot be reached, again by the sweeper.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from typing import Any

from accord.agents import ContractActions, Host
from accord.contracts import _documents as documents
from accord.contracts import _enforcement as enforcement
from accord.contracts import _lifecycle as lifecycle
from accord.contracts._decisions import Decisions
from accord.contracts._errors import (
    CONTRACT_CONFLICT,
    CONTRACT_EXISTS,
    CONTRACT_EXPIRED,
    CONTRACT_MISMATCH,
    INVALID_ACCEPTANCE,
    INVALID_DOCUMENT,
    NOT_A_PARTY,
    NOT_PERMITTED,
    PEER_UNREACHABLE,
    ContractRefusal,
    unknown_contract,
)
from accord.contracts._lifecycle import Moved
from accord.contracts._peers import Peers
from accord.contracts._proofs import channel_acceptance, signed_acceptance, verify_acceptance
from accord.contracts._record import LIVE, ContractRecord, Event
from accord.contracts._schema import PROTOCOL_VERSION, SchemaError, parse_terms
from accord.contracts._settings import ContractSettings, Identity
from accord.contracts._tables import ContractConflict, ContractStore
from accord.contracts._wire import Notice, Reference, asked_of, reference_of
from accord.core import Caller
from accord.core.lifecycle import TERMINAL
from accord.errors import AccordError
from accord.wire import (
    A2AError,
    FieldViolation,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
    format_timestamp,
    parse_timestamp,
)

log = logging.getLogger("accord.contracts")

MAX_RACES = 8  # decide again at most this often when another writer got there first
SWEEP_BATCH = 100
RETENTION_BATCH = 500


class ContractService:
    def __init__(
        self,
        *,
        identity: Identity,
        settings: ContractSettings,
        store: ContractStore,
        engine: Host,
        peers: Peers,
        public_url: str,
        agent: Any = None,
        skills: tuple[str, ...] = (),
    ) -> None:
        self.identity = identity
        self.me = identity.agent_id
        self.settings = settings
        self.store = store
        self.engine = engine
        self.peers = peers
        self.public_url = public_url.rstrip("/")
        self.clock: Callable[[], int] = engine.clock
        self._agent_action = agent.contract_action if isinstance(agent, ContractActions) else None
        self.skills = skills
        self._retention_after: tuple[str, str, str] = ("", "", "")
        self.decisions = Decisions()  # the last enforcement decisions (the gate notes them)

    @property
    def window_ms(self) -> int:
        return int(self.settings.completion_window_s * 1000)

    # --- reading --------------------------------------------------------------------------

    async def get(self, tenant: str, interaction_id: str) -> ContractRecord:
        record = await self.store.get(tenant, interaction_id)
        if record is None:
            raise unknown_contract(interaction_id)
        return record

    async def current(self, tenant: str, interaction_id: str) -> ContractRecord | None:
        """The record as it stands now: a contract found past its expiry is expired first
        (expiry is checked on every use, not only by the sweeper)."""
        record = await self.store.get(tenant, interaction_id)
        if record is not None and lifecycle.expire(record, now_ms=self.clock()) is not None:
            record = await self._expire(record)
        return record

    async def events(self, tenant: str, interaction_id: str) -> list[Event]:
        return await self.store.events(tenant, interaction_id)

    def action_of(self, message: Message) -> str | None:
        agent_says = self._agent_action(message) if self._agent_action is not None else None
        return enforcement.requested_action(
            message,
            declared=asked_of(message).action,
            agent_says=agent_says,
            skills=self.skills,
        )

    # --- writing ----------------------------------------------------------------------------

    def _due(self, record: ContractRecord) -> int | None:
        due = lifecycle.due_ms(record, self.window_ms)
        if record.outbox:  # a notice owed: the sweeper's next pass delivers it
            now = self.clock()
            due = now if due is None else min(due, now)
        return due

    async def _move(
        self,
        tenant: str,
        interaction_id: str,
        decide: Callable[[ContractRecord], Moved],
        *,
        notice: str | None = None,
    ) -> ContractRecord:
        """Decide against the stored record and write the result over its version; when
        another writer got there first, decide again against what it wrote."""
        for _ in range(MAX_RACES):
            record = await self.get(tenant, interaction_id)
            try:
                new, event = decide(record)
            except ContractRefusal as refusal:
                if refusal.code == CONTRACT_EXPIRED:
                    await self._expire(record)
                raise
            if notice is not None:
                new = new.replace(outbox=(*new.outbox, notice))
            try:
                await self.store.replace(new, record.version, event, self._due(new))
            except ContractConflict:
                continue
            if new.terminal and not record.terminal:
                await self._ended(new)
            return new
        raise ContractRefusal(
            CONTRACT_CONFLICT,
            f"contract {interaction_id} keeps changing; try again",
            interaction_id=interaction_id,
        )

    async def _expire(self, record: ContractRecord) -> ContractRecord:
        def decide(current: ContractRecord) -> Moved:
            moved = lifecycle.expire(current, now_ms=self.clock())
            if moved is None:
                raise _Unchanged(current)
            return moved

        try:
            return await self._move(record.tenant, record.interaction_id, decide)
        except _Unchanged as unchanged:
            return unchanged.record

    async def _ended(self, record: ContractRecord) -> None:
        """A contract that ends cancels the tasks running under it."""
        ending = record.ending
        log.info(
            "contract %s %s (by %s%s)",
            record.interaction_id,
            record.status,
            ending.by if ending else "?",
            f": {ending.reason}" if ending and ending.reason else "",
        )
        caller = Caller(identity=f"contract:{record.interaction_id}", tenant=record.tenant)
        for task_id in await self.store.bound_tasks(record.tenant, record.interaction_id):
            with contextlib.suppress(A2AError):  # already terminal, or gone
                await self.engine.cancel_task(task_id, caller, guard=False)

    def _acceptance(self, interaction_id: str, hash_: str, accepted_at: str) -> dict[str, Any]:
        """This agent's acceptance: signed with the key valid now, or — an agent without
        keys — made by its authenticated operator (oauth_account)."""
        key = self.identity.keys.signing_key(self.clock())
        if key is None:
            return channel_acceptance(self.me, hash_, accepted_at)
        return signed_acceptance(interaction_id, self.me, hash_, accepted_at, key)

    # --- the operators' moves ---------------------------------------------------------------

    async def propose(
        self,
        tenant: str,
        *,
        responder: str,
        terms: Any,
        expires_at: str | None = None,
    ) -> ContractRecord:
        """A new contract with ``responder`` on ``terms`` (``interactionId``, ``parties`` and
        ``protocolVersion`` filled in when absent), signed here and delivered to it."""
        if responder == self.me:
            raise ContractRefusal(NOT_PERMITTED, "an agent cannot make a contract with itself")
        if not isinstance(terms, dict):
            raise _invalid("terms", "expected an object")
        filled = {
            "protocolVersion": PROTOCOL_VERSION,
            "interactionId": str(uuid.uuid4()),
            "parties": [self.me, responder],
            **terms,
        }
        try:
            parsed = parse_terms(filled)
        except SchemaError as exc:
            raise ContractRefusal(
                INVALID_DOCUMENT,
                f"terms: {exc}",
                violations=[
                    FieldViolation(f"terms.{v.field}", v.description) for v in exc.violations
                ],
            ) from None
        now = self.clock()
        expires = now + int(self.settings.lifetime_s * 1000)
        if expires_at is not None:
            try:
                expires = parse_timestamp(expires_at)
            except ValueError:
                raise _invalid("expiresAt", "expected an RFC 3339 time") from None
        interaction_id = str(parsed["interactionId"])
        peer = await self.peers.card(responder)  # (after the cheap checks: it may be far)
        document = documents.new_proposal(
            parsed,
            initiator=self.me,
            responder=responder,
            initiator_transport=documents.transport(self.public_url),
            responder_transport=documents.transport(peer.endpoint, peer.binding),
            now_ms=now,
            expires_ms=expires,
            accept=lambda hash_, at: self._acceptance(interaction_id, hash_, at),
        )
        record, event = lifecycle.propose(document, tenant=tenant, local_agent=self.me, now_ms=now)
        try:
            await self.store.create(record, event, self._due(record))
        except ContractConflict:
            raise ContractRefusal(
                CONTRACT_EXISTS,
                f"interaction {interaction_id} exists already",
                interaction_id=interaction_id,
            ) from None
        try:
            await self.peers.send(
                responder, Notice("proposal", interaction_id, document), Reference.of(document)
            )
        except ContractRefusal as refusal:
            # Never delivered: withdrawn here, so it cannot be confused with a live proposal.
            reason = f"the proposal did not reach {responder}: {refusal.message}"
            await self._move(
                tenant,
                interaction_id,
                lambda r: lifecycle.withdraw(r, by=self.me, reason=reason, now_ms=self.clock()),
            )
            raise
        return await self.get(tenant, interaction_id)

    async def accept(self, tenant: str, interaction_id: str) -> ContractRecord:
        def decide(record: ContractRecord) -> Moved:
            now = self.clock()
            acceptance = self._acceptance(interaction_id, record.terms_hash, format_timestamp(now))
            return lifecycle.accept(record, acceptance, by=self.me, now_ms=now)

        record = await self._move(tenant, interaction_id, decide, notice="acceptance")
        return await self.deliver(record)

    async def reject(self, tenant: str, interaction_id: str, reason: str) -> ContractRecord:
        record = await self._move(
            tenant,
            interaction_id,
            lambda r: lifecycle.reject(r, by=self.me, reason=reason, now_ms=self.clock()),
            notice="rejection",
        )
        return await self.deliver(record)

    async def cancel(self, tenant: str, interaction_id: str, reason: str) -> ContractRecord:
        """Withdraw a pending proposal (the initiator; the responder decides first) or cancel
        an active contract (either party)."""
        record = await self.get(tenant, interaction_id)
        if record.status == "pending" and record.local_role == "initiator":
            if lifecycle.expire(record, now_ms=self.clock()) is None:
                await self.peers.send(
                    record.counterparty,
                    Notice("withdrawal", interaction_id, reason=reason),
                    Reference.of(record.document),
                )
            return await self._move(
                tenant,
                interaction_id,
                lambda r: lifecycle.withdraw(r, by=self.me, reason=reason, now_ms=self.clock()),
            )
        if record.status == "pending":
            raise ContractRefusal(
                NOT_PERMITTED,
                f"{self.me} is the responder of pending contract {interaction_id}: reject it",
                interaction_id=interaction_id,
            )
        record = await self._move(
            tenant,
            interaction_id,
            lambda r: lifecycle.cancel(r, by=self.me, reason=reason, now_ms=self.clock()),
            notice="cancellation",
        )
        return await self.deliver(record)

    async def complete(self, tenant: str, interaction_id: str) -> ContractRecord:
        record = await self._move(
            tenant,
            interaction_id,
            lambda r: lifecycle.complete(r, by=self.me, now_ms=self.clock()),
            notice="completion",
        )
        return await self.deliver(record)

    async def approve(
        self, tenant: str, interaction_id: str, task_id: str, operator: str
    ) -> ContractRecord:
        """A person approves the action a task was parked for; the parked message then goes
        to the agent (sent again on the task, by the other party, as it was)."""
        record = await self.get(tenant, interaction_id)
        if task_id not in await self.store.bound_tasks(tenant, interaction_id):
            raise _conflict(record, f"task {task_id} does not run under contract {interaction_id}")
        stored = await self.engine.store.get_task(task_id, tenant)
        if stored is None or stored.state is not TaskState.INPUT_REQUIRED:
            raise _conflict(record, f"task {task_id} is not waiting for an approval")
        parked = _parked_message(stored.task.history, interaction_id)
        action = self.action_of(parked) if parked is not None else None
        if (
            parked is None
            or action is None
            or action not in record.terms["humanApprovalRequirements"]
        ):
            raise _conflict(record, f"task {task_id} is not waiting for an approval")
        record = await self._move(
            tenant,
            interaction_id,
            lambda r: lifecycle.approve(
                r, task_id=task_id, action=action, by=operator, now_ms=self.clock()
            ),
        )
        again = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=parked.parts,
            task_id=task_id,
            context_id=stored.task.context_id,
            metadata=parked.metadata,
        )
        sender = Caller(identity=record.counterparty, tenant=tenant, authenticated=True)
        await self.engine.send_message(
            SendMessageRequest(
                message=again,
                configuration=SendMessageConfiguration(return_immediately=True),
            ),
            sender,
        )
        return record

    # --- notices from the other agent -----------------------------------------------------

    async def receive(self, notice: Notice, sender: Caller) -> ContractRecord:
        """Apply a notice the other agent sent (``sender``: its authenticated caller)."""
        if not sender.authenticated:
            raise ContractRefusal(
                NOT_A_PARTY,
                "contract notices need an authenticated sender",
                interaction_id=notice.interaction_id,
            )
        if notice.kind == "proposal":
            return await self._proposed(notice, sender)
        record = await self.store.get(sender.tenant, notice.interaction_id)
        if record is None or sender.identity != record.counterparty:
            # (to a sender that is not its other party, a contract is as unknown as none)
            raise unknown_contract(
                notice.interaction_id, exists=record is not None, who=repr(sender.identity)
            )
        by = sender.identity
        if notice.kind == "acceptance":
            return await self._accepted(record, notice, sender)
        done = {
            "rejection": "rejected",
            "withdrawal": "cancelled",
            "cancellation": "cancelled",
            "completion": "completed",
        }[notice.kind]
        if record.status == done and record.ending is not None and record.ending.by == by:
            return record  # told twice (a notice sent again): nothing more to do
        reason = notice.reason
        moves: dict[str, Callable[[ContractRecord], Moved]] = {
            "rejection": lambda r: lifecycle.reject(r, by=by, reason=reason, now_ms=self.clock()),
            "withdrawal": lambda r: lifecycle.withdraw(
                r, by=by, reason=reason, now_ms=self.clock()
            ),
            "cancellation": lambda r: lifecycle.cancel(
                r, by=by, reason=reason, now_ms=self.clock()
            ),
            "completion": lambda r: lifecycle.complete(r, by=by, now_ms=self.clock()),
        }
        return await self._move(sender.tenant, notice.interaction_id, moves[notice.kind])

    async def _proposed(self, notice: Notice, sender: Caller) -> ContractRecord:
        document = documents.checked(notice.document)
        initiator = str(document["initiatorAgentId"])
        interaction_id = str(document["interactionId"])
        if sender.identity != initiator:
            raise ContractRefusal(
                NOT_A_PARTY,
                f"{sender.identity!r} cannot propose on behalf of {initiator!r}",
                interaction_id=interaction_id,
            )
        if document["responderAgentId"] != self.me:
            raise ContractRefusal(
                NOT_A_PARTY,
                f"the proposal is addressed to {document['responderAgentId']!r}, not {self.me!r}",
                interaction_id=interaction_id,
            )
        endpoint = str(document["responderTransport"]["endpoint"]).rstrip("/")
        if endpoint != self.public_url:
            raise _invalid(
                "responderTransport.endpoint",
                f"is not this agent's endpoint ({self.public_url})",
                interaction_id,
            )
        acceptance = document["acceptances"].get(initiator)
        if acceptance is None:
            raise ContractRefusal(
                INVALID_ACCEPTANCE,
                f"{initiator} has not accepted its own proposal",
                interaction_id=interaction_id,
            )
        await self._verify(document, initiator, acceptance, sender)
        record, event = lifecycle.propose(
            document, tenant=sender.tenant, local_agent=self.me, now_ms=self.clock()
        )
        try:
            await self.store.create(record, event, self._due(record))
        except ContractConflict:
            found = await self.get(sender.tenant, interaction_id)
            if found.initiator == initiator and documents.same_terms(found.document, document):
                return found  # the same proposal, delivered again
            raise ContractRefusal(
                CONTRACT_EXISTS,
                f"interaction {interaction_id} exists already",
                interaction_id=interaction_id,
            ) from None
        log.info("contract %s proposed by %s", interaction_id, initiator)
        return record

    async def _accepted(
        self, record: ContractRecord, notice: Notice, sender: Caller
    ) -> ContractRecord:
        document = documents.checked(notice.document)
        if not documents.same_terms(document, record.document):
            raise ContractRefusal(
                CONTRACT_MISMATCH,
                "the acceptance is of other terms or parties than the proposal",
                interaction_id=record.interaction_id,
            )
        if record.local_role != "initiator":
            raise ContractRefusal(
                NOT_PERMITTED, "only the responder accepts", interaction_id=record.interaction_id
            )
        acceptance = document["acceptances"].get(record.responder)
        if acceptance is None:
            raise ContractRefusal(
                INVALID_ACCEPTANCE,
                f"no acceptance of {record.responder} in it",
                interaction_id=record.interaction_id,
            )
        if record.document["acceptances"].get(record.responder) == acceptance:
            return record  # told twice
        await self._verify(record.document, record.responder, acceptance, sender)
        return await self._move(
            record.tenant,
            record.interaction_id,
            lambda r: lifecycle.accept(r, acceptance, by=record.responder, now_ms=self.clock()),
        )

    async def _verify(
        self,
        document: dict[str, Any],
        agent_id: str,
        acceptance: dict[str, Any],
        sender: Caller,
    ) -> None:
        """An acceptance of ``agent_id`` arriving from ``sender``: dated within the contract's
        life (give or take the clock skew) and proven by the agent's key valid then (its
        card is read again once when the key is not among those known). An unsigned
        (``oauth_account``) acceptance is taken over the agent's own authenticated channel
        only, and never when its acceptances must be signed (``require_signed_acceptances``;
        by default, when it publishes keys)."""
        interaction_id = str(document["interactionId"])
        skew = int(self.settings.clock_skew_s * 1000)
        at = parse_timestamp(acceptance["acceptedAt"])
        created = parse_timestamp(document["createdAt"])
        if (
            not created - skew
            <= at
            <= min(self.clock() + skew, parse_timestamp(document["expiresAt"]))
        ):
            raise ContractRefusal(
                INVALID_ACCEPTANCE,
                f"{agent_id}'s acceptedAt is outside the contract's life",
                interaction_id=interaction_id,
            )
        for fresh in (False, True):
            keys = (await self.peers.card(agent_id, fresh=fresh)).keys
            try:
                verify_acceptance(
                    acceptance,
                    interaction_id=interaction_id,
                    agent_id=agent_id,
                    hash_=str(document["termsHash"]),
                    keys=keys,
                    vouched_by=sender.identity,
                    signed_only=self.settings.signed_acceptances_required(
                        agent_id, publishes_keys=len(keys) > 0
                    ),
                )
                return
            except ContractRefusal as refusal:
                refusal.interaction_id = interaction_id
                if fresh:
                    raise

    # --- delivery and the sweeper -----------------------------------------------------------

    def _notice(self, record: ContractRecord, kind: str) -> Notice:
        if kind == "acceptance":
            return Notice(kind, record.interaction_id, record.document)
        reason = record.ending.reason if record.ending is not None else ""
        return Notice(kind, record.interaction_id, reason=reason)

    async def deliver(self, record: ContractRecord) -> ContractRecord:
        """Deliver the notices the record owes the other agent, oldest first; one the other
        agent cannot be reached for stays queued for the sweeper."""
        while record.outbox:
            kind = record.outbox[0]
            outcome = "delivered"
            try:
                await self.peers.send(
                    record.counterparty, self._notice(record, kind), Reference.of(record.document)
                )
            except ContractRefusal as refusal:
                if refusal.code == PEER_UNREACHABLE:
                    log.warning("contract %s: %s (will retry)", record.interaction_id, refusal)
                    return record
                # Refused: it would be refused again; the log keeps why.
                log.warning("contract %s: %s", record.interaction_id, refusal)
                outcome = f"refused: {refusal.message}"

            def sent(current: ContractRecord, kind: str = kind, outcome: str = outcome) -> Moved:
                if not current.outbox or current.outbox[0] != kind:
                    raise _Unchanged(current)
                version = current.version + 1
                new = current.replace(version=version, outbox=current.outbox[1:])
                detail = {"notice": kind, "outcome": outcome}
                return new, Event(version, "notified", self.clock(), self.me, detail)

            try:
                record = await self._move(record.tenant, record.interaction_id, sent)
            except _Unchanged as unchanged:
                record = unchanged.record
        return record

    async def sweep(self) -> None:
        """One pass: expire, settle completion windows, deliver owed notices, and apply each
        contract's retention to the tasks that ran under it."""
        now = self.clock()
        for record in await self.store.due(now, SWEEP_BATCH):
            try:
                await self._sweep_one(record, now)
            except Exception:
                log.exception("contract sweep failed on %s", record.interaction_id)
        await self._retention(now)

    async def _sweep_one(self, record: ContractRecord, now: int) -> None:
        if record.status in LIVE:
            if lifecycle.expire(record, now_ms=now) is not None:
                record = await self._expire(record)
            else:

                def settle(current: ContractRecord) -> Moved:
                    moved = lifecycle.settle(current, now_ms=self.clock(), window_ms=self.window_ms)
                    if moved is None:
                        raise _Unchanged(current)
                    return moved

                with contextlib.suppress(_Unchanged):
                    record = await self._move(record.tenant, record.interaction_id, settle)
        if record.outbox:
            await self.deliver(record)

    async def _retention(self, now: int) -> None:
        """Tasks under a contract are kept ``retentionDays`` after they ended (0: gone at
        the next pass once terminal)."""
        bindings = await self.store.bindings(RETENTION_BATCH, self._retention_after)
        self._retention_after = bindings[-1] if len(bindings) == RETENTION_BATCH else ("", "", "")
        by_contract: dict[tuple[str, str], list[str]] = {}
        for tenant, interaction_id, task_id in bindings:
            by_contract.setdefault((tenant, interaction_id), []).append(task_id)
        for (tenant, interaction_id), task_ids in by_contract.items():
            record = await self.store.get(tenant, interaction_id)
            if record is None:
                continue
            keep_ms = int(record.terms["retentionDays"]) * 86_400_000
            doomed, gone = [], []
            for task_id in task_ids:
                task = await self.engine.store.get_task(task_id, tenant)
                if task is None:
                    gone.append(task_id)
                elif task.state in TERMINAL and task.updated_ms + keep_ms <= now:
                    doomed.append(task_id)
            if doomed:
                deleted = await self.store.delete_terminal_tasks(tenant, doomed)
                gone += deleted
                if deleted:
                    log.info(
                        "contract %s: deleted %d task(s) past retention (%s days)",
                        interaction_id,
                        len(deleted),
                        record.terms["retentionDays"],
                    )
            if gone:
                await self.store.unbind(tenant, interaction_id, gone)

    async def run_sweeper(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval_s)
            try:
                await self.sweep()
            except Exception:
                log.exception("contract sweep failed")


class _Unchanged(AccordError):
    """A move that found nothing to do (raised out of a decision to skip the write)."""

    def __init__(self, record: ContractRecord) -> None:
        self.record = record


def _invalid(field: str, message: str, interaction_id: str = "") -> ContractRefusal:
    return ContractRefusal(
        INVALID_DOCUMENT,
        f"{field}: {message}",
        interaction_id=interaction_id,
        violations=[FieldViolation(field, message)],
    )


def _conflict(record: ContractRecord, message: str) -> ContractRefusal:
    return ContractRefusal(CONTRACT_CONFLICT, message, interaction_id=record.interaction_id)


def _parked_message(history: list[Message], interaction_id: str) -> Message | None:
    """The last message of the other party under this contract: the one a task was parked
    on."""
    for message in reversed(history):
        if message.role is not Role.USER:
            continue
        try:
            reference = reference_of(message)
        except ContractRefusal:
            continue
        if reference is not None and reference.interaction_id == interaction_id:
            return message
    return None
