"""The SSRF guard: URLs naming or resolving to each refused range are refused at registration
and at delivery; the operator's allow-list admits what it names."""

from __future__ import annotations

import dataclasses
import ipaddress
from pathlib import Path

import pytest

from accord.push import DeliveryError, Guard, PushSettings, RefusedTarget, Sender
from accord.push._delivery import pinned_url, request_headers
from accord.push._ssrf import AddressPolicy, parse_target, refusal
from accord.store import TaskStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import AuthenticationInfo, TaskPushNotificationConfig

from .helpers import (
    BACKENDS,
    FAST,
    make_store,
    request,
    running,
    send,
    settled,
    three_artifacts,
    webhook,
)
from .receiver import Receiver

# One address per refused range, with a word its refusal must contain.
REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fdff:1234::5", "private"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("::", "unspecified"),
    ("100.64.0.1", "CGNAT"),
    ("169.254.169.254", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:169.254.169.254", "metadata"),
    ("::ffff:10.0.0.1", "private"),
    ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946", "::ffff:8.8.8.8"]


def resolver_to(*addresses: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


@pytest.mark.parametrize(("address", "word"), REFUSED)
def test_each_refused_range(address: str, word: str) -> None:
    why = refusal(ipaddress.ip_address(address))
    assert why is not None and word in why


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("address", "word"), REFUSED)
async def test_a_url_naming_a_refused_address_is_refused_at_registration(
    address: str, word: str
) -> None:
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(RefusedTarget, match=word):
        await Guard().check_registration(f"https://{host}:8443/hook")


@pytest.mark.parametrize(("address", "word"), REFUSED)
async def test_a_name_resolving_to_a_refused_address_is_refused(address: str, word: str) -> None:
    guard = Guard(resolver=resolver_to("93.184.216.34", address))
    with pytest.raises(RefusedTarget, match=f"hooks.example resolves to .*{word}"):
        await guard.check_registration("https://hooks.example/x")
    with pytest.raises(RefusedTarget, match=word):  # delivery: every address is checked
        await guard.resolve(parse_target("https://hooks.example/x"))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example/x", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("gopher://hooks.example/", "only http and https"),
        ("http:///nohost", "no host"),
        ("https://user:pw@hooks.example/", "credentials in the URL"),
        ("http://hooks.example:99999/", "not a valid URL"),
        ("http://localhost:8080/x", "loopback name"),
        ("http://api.localhost/x", "loopback name"),
    ],
)
async def test_url_forms_refused(url: str, why: str) -> None:
    with pytest.raises(RefusedTarget, match=why):
        await Guard(resolver=resolver_to("93.184.216.34")).check_registration(url)


async def test_public_names_and_addresses_pass_and_unresolvable_names_wait_for_delivery() -> None:
    await Guard(resolver=resolver_to("93.184.216.34")).check_registration("https://a.example/x")
    await Guard().check_registration("http://93.184.216.34/x")
    await Guard().check_registration("https://[2606:2800:220:1:248:1893:25c8:1946]/x")

    async def nxdomain(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    guard = Guard(resolver=nxdomain)
    await guard.check_registration("https://not-yet.example/x")  # accepted for now
    with pytest.raises(RefusedTarget, match="cannot resolve"):
        await guard.resolve(parse_target("https://not-yet.example/x"))


async def test_the_allow_list_admits_names_and_cidrs() -> None:
    policy = AddressPolicy(["localhost", "10.0.0.0/8", "::1", " Hooks.Internal. "])
    loopback = resolver_to("127.0.0.1", "::1")
    guard = Guard(policy, loopback)
    await guard.check_registration("http://localhost:9999/webhook")
    assert [str(a) for a in await guard.resolve(parse_target("http://localhost/w"))] == [
        "127.0.0.1",
        "::1",
    ]
    await guard.check_registration("http://10.9.8.7/x")
    await guard.check_registration("http://[::ffff:10.9.8.7]/x")  # mapped form of an admitted one
    await guard.check_registration("http://[::1]/x")
    await Guard(policy, resolver_to("192.168.0.1")).check_registration("http://hooks.internal/")
    with pytest.raises(RefusedTarget, match="loopback"):
        await guard.check_registration("http://127.0.0.1/x")  # admitted by name only
    with pytest.raises(RefusedTarget, match="private"):
        await Guard(policy, resolver_to("192.168.0.1")).check_registration("http://other.lan/")


def test_requests_pin_the_checked_address() -> None:
    target = parse_target("https://Hooks.Example:8443/a/b?c=d#frag")
    assert target.host == "hooks.example" and target.origin == "https://hooks.example:8443"
    assert pinned_url(target, ipaddress.ip_address("93.184.216.34")) == (
        "https://93.184.216.34:8443/a/b?c=d"
    )
    v6 = ipaddress.ip_address("2606:2800:220:1:248:1893:25c8:1946")
    assert pinned_url(target, v6).startswith("https://[2606:2800:220:1:248:1893:25c8:1946]:8443/")
    config = TaskPushNotificationConfig(
        url="https://hooks.example/x",
        token="t",
        authentication=AuthenticationInfo(scheme="Basic", credentials="dXNlcjpwdw=="),
    )
    assert request_headers(config, "task-1:7") == {
        "Content-Type": "application/a2a+json",
        "X-A2A-Event-Id": "task-1:7",
        "Authorization": "Basic dXNlcjpwdw==",
        "X-A2A-Notification-Token": "t",
    }


# --- through the engine -------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return make_store(request.param, tmp_path, request)


async def test_delivery_refuses_a_name_that_resolves_inward_after_registration(
    store: TaskStore,
) -> None:
    """DNS rebinding: public at registration, 127.0.0.1 at delivery. Nothing is posted and the
    config is failing at once (retrying a refused target is pointless)."""
    answers = iter([["93.184.216.34"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers, ["127.0.0.1"])

    settings = dataclasses.replace(FAST, allow=())
    async with (
        Receiver() as receiver,
        running(store, three_artifacts, settings, rebinding) as (
            engine,
            _,
        ),
    ):
        url = f"http://rebind.example:{receiver.port}/webhook"
        task = await send(engine, request("go", push=webhook(url)))
        delivery = await settled(store, task.id, "hook", "failing")
        assert delivery.failures == 1 and delivery.cursor == 0
        assert "rebind.example resolves to 127.0.0.1, a loopback address" in delivery.last_error
        assert receiver.received == []


async def test_delivery_to_an_admitted_name_resolving_to_loopback(store: TaskStore) -> None:
    async def to_loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    settings = dataclasses.replace(FAST, allow=("hooks.test",))
    async with (
        Receiver() as receiver,
        running(store, three_artifacts, settings, to_loopback) as (
            engine,
            _,
        ),
    ):
        url = f"http://hooks.test:{receiver.port}/webhook"
        task = await send(engine, request("go", push=webhook(url)))
        await receiver.wait_for(lambda r: len(r.accepted_ids()) == 6)
        assert receiver.received[0].headers["host"] == f"hooks.test:{receiver.port}"
        assert receiver.accepted_ids()[0] == f"{task.id}:1"


async def test_registration_through_the_engine_names_the_field(store: TaskStore) -> None:
    async with running(store, three_artifacts, PushSettings()) as (engine, _):
        for url in ("http://10.0.0.5/x", "http://[fe80::1]/x", "ftp://hooks.example/x"):
            with pytest.raises(A2AError) as refused:
                await send(engine, request("go", push=webhook(url)))
            assert refused.value.kind is ErrorKind.INVALID_PARAMS
            assert refused.value.message.startswith(
                "configuration.taskPushNotificationConfig.url: webhook URL refused: "
            )


@pytest.mark.parametrize(("address", "word"), REFUSED)
async def test_the_sender_posts_nothing_to_a_name_resolving_to_a_refused_address(
    address: str, word: str
) -> None:
    sender = Sender(Guard(resolver=resolver_to(address)))
    config = TaskPushNotificationConfig(url="https://hooks.example/x")
    try:
        with pytest.raises(DeliveryError, match=word) as refused:
            await sender.send(config, "task-1:1", b"{}")
        assert refused.value.permanent
    finally:
        await sender.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/x",  # 127.0.0.1 as one number
        "http://0x7f000001/x",
        "http://017700000001/x",
        "http://127.1/x",
        "http://LOCALHOST./x",
        "http://[::ffff:7f00:1]/x",
    ],
)
async def test_other_spellings_of_loopback_are_refused(url: str) -> None:
    """The system resolver turns these into 127.0.0.1; what is checked is what it returns."""
    guard = Guard()
    with pytest.raises(RefusedTarget, match="loopback"):
        await guard.check_registration(url)
    with pytest.raises(RefusedTarget, match="loopback"):
        await guard.resolve(parse_target(url))
