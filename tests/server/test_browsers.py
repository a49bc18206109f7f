"""What a web browser's pages can do to accord, over real HTTP (accord's own server, in
process): a server without credentials answers only loopback Host names (DNS rebinding), no
cross-site Origin is admitted unless CORS lists it, every POST must be declared JSON (so a
blind cross-site POST cannot drive it), and CORS is off until ``cors_origins`` is set."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from server_helpers import listening

from accord.app._build import build_app
from accord.app._settings import Settings, load
from accord.cli._main import main

KEY = "client-key-0123456789abcdef"
PRINCIPALS = [{"identity": "client", "api_key": KEY}]
TOKEN = "webhook-token-that-must-not-leak"
APP_ORIGIN = "https://app.example"
EVIL = "https://evil.example"


@contextlib.asynccontextmanager
async def running(**overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
    """``accord serve`` in process (the echo agent, memory store) and a client of it."""
    settings = dataclasses.replace(Settings(store="memory://"), **overrides)
    async with (
        listening(build_app(settings)) as port,
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"A2A-Version": "1.0"}, timeout=10
        ) as http,
    ):
        yield http


def message() -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


async def tasks(http: httpx.AsyncClient, **headers: str) -> list[str]:
    listed = await http.get("/tasks", headers=headers)
    assert listed.status_code == 200, listed.text
    return [t["id"] for t in listed.json()["tasks"]]


async def task_with_webhook(http: httpx.AsyncClient, **headers: str) -> str:
    sent = await http.post("/message:send", json={"message": message()}, headers=headers)
    task_id: str = sent.json()["task"]["id"]
    config = {"id": "cfg", "url": "https://example.com/hook", "token": TOKEN}
    path = f"/tasks/{task_id}/pushNotificationConfigs"
    assert (await http.post(path, json=config, headers=headers)).status_code == 200
    return task_id


def rest_reason(response: httpx.Response) -> str:
    details = response.json()["error"]["details"]
    return next(str(d["reason"]) for d in details if d["@type"].endswith("ErrorInfo"))


# --- Host: DNS rebinding --------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    ["localhost", "LOCALHOST:9999", "localhost.:1", "127.0.0.1", "127.8.9.10:80", "[::1]:9999"],
)
async def test_open_mode_answers_loopback_host_names(host: str) -> None:
    async with running() as http:
        assert (await http.get("/tasks", headers={"Host": host})).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:9999", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]"],
)
async def test_open_mode_refuses_other_host_names_on_every_binding(host: str) -> None:
    async with running() as http:
        task_id = await task_with_webhook(http)
        rebound = {"Host": host}
        configs = await http.get(f"/tasks/{task_id}/pushNotificationConfigs", headers=rebound)
        assert configs.status_code == 403 and rest_reason(configs) == "PERMISSION_DENIED"
        assert TOKEN not in configs.text and "allowed_hosts" in configs.text
        listed = await http.post("/", json=rpc("ListTasks", {}), headers=rebound)
        assert listed.json()["error"]["code"] == -32013 and task_id not in listed.text
        view = await http.get("/tasks/views/allPushNotificationConfigs", headers=rebound)
        assert view.status_code == 403 and TOKEN not in view.text
        card = await http.get("/.well-known/agent-card.json", headers=rebound)
        assert card.status_code == 403


async def test_allowed_hosts_and_the_public_url_host_are_answered() -> None:
    async with running(allowed_hosts=["Box.Lan"], public_url="http://agent.local:8080/") as http:
        for host in ("box.lan:9999", "agent.local:8080", "agent.local"):
            assert (await http.get("/tasks", headers={"Host": host})).status_code == 200
        assert (await http.get("/tasks", headers={"Host": "other.lan"})).status_code == 403


async def test_with_credentials_the_host_is_not_checked() -> None:
    async with running(principals=PRINCIPALS) as http:
        who = {"X-API-Key": KEY, "Host": "agent.example.com"}
        assert (await http.get("/tasks", headers=who)).status_code == 200


# --- Origin ---------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", [EVIL, "null", "http://localhost:3000"])
async def test_open_mode_refuses_a_cross_site_page(origin: str) -> None:
    async with running() as http:
        page = {"Origin": origin}
        sent = await http.post("/message:send", json={"message": message()}, headers=page)
        assert sent.status_code == 403 and "cors_origins" in sent.text
        rpc_sent = await http.post(
            "/", json=rpc("SendMessage", {"message": message()}), headers=page
        )
        assert rpc_sent.json()["error"]["code"] == -32013
        surface = await http.post(
            "/tasks/commands/message:send", json={"message": message()}, headers=page
        )
        assert surface.status_code == 403
        assert await tasks(http) == []


async def test_a_page_of_the_server_s_own_origin_is_admitted() -> None:
    async with running() as http:
        own = {"Origin": str(http.base_url).rstrip("/")}
        sent = await http.post("/message:send", json={"message": message()}, headers=own)
        assert sent.status_code == 200
        assert "access-control-allow-origin" not in sent.headers  # same origin: no CORS


@pytest.mark.parametrize("require_auth", [True, False])
async def test_with_credentials_a_cross_site_page_is_refused_too(require_auth: bool) -> None:
    """Admitting anonymous callers (require_auth = false) must not admit every page its users
    visit; and a page with a key needs CORS anyway."""
    async with running(principals=PRINCIPALS, require_auth=require_auth) as http:
        page = {"Origin": EVIL, "X-API-Key": KEY}
        sent = await http.post("/message:send", json={"message": message()}, headers=page)
        assert sent.status_code == 403
        anonymous = await http.post(
            "/message:send", json={"message": message()}, headers={"Origin": EVIL}
        )
        assert anonymous.status_code == 403
        assert await tasks(http, **{"X-API-Key": KEY}) == []


# --- JSON bodies only -----------------------------------------------------------------------

NOT_JSON = [
    {},  # no Content-Type: a browser's fetch with a string body sends text/plain, or none
    {"Content-Type": "text/plain"},
    {"Content-Type": "text/plain; charset=json"},  # safelisted for browsers: no preflight
    {"Content-Type": "application/x-www-form-urlencoded"},
    {"Content-Type": "multipart/form-data; boundary=x"},
]


@pytest.mark.parametrize("headers", NOT_JSON)
async def test_a_post_not_declared_json_drives_nothing(headers: dict[str, str]) -> None:
    async with running() as http:
        body = b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}'
        rest = await http.post("/message:send", content=body, headers=headers)
        assert rest.status_code == 415 and rest_reason(rest) == "CONTENT_TYPE_NOT_SUPPORTED"
        envelope = b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ' + body[:-1]
        jsonrpc = await http.post("/", content=envelope + b"}}", headers=headers)
        assert jsonrpc.json()["error"]["code"] == -32005
        # The version in the query string (which A2A allows) does not help such a request.
        queried = await http.post("/?A2A-Version=1.0", content=envelope + b"}}", headers=headers)
        assert queried.json()["error"]["code"] == -32005
        surface = await http.post("/tasks/commands/message:send", content=body, headers=headers)
        assert surface.status_code == 415
        assert await tasks(http) == []
        cancel = await http.post("/tasks/some-task:cancel", headers=headers)
        assert cancel.status_code == 415


async def test_a_bodiless_subscribe_needs_no_content_type() -> None:
    """The official SDK (and accord's client) subscribe over HTTP+JSON with an empty POST."""
    async with running() as http:
        task_id = (await http.post("/message:send", json={"message": message()})).json()["task"]
        answer = await http.post(f"/tasks/{task_id['id']}:subscribe")
        assert answer.status_code != 415
        assert rest_reason(answer) == "UNSUPPORTED_OPERATION"  # the task is already done


async def test_json_media_types_are_accepted() -> None:
    async with running() as http:
        for media_type in (
            "application/json",
            "application/json; charset=utf-8",
            "application/a2a+json",
        ):
            body = b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}'
            sent = await http.post(
                "/message:send", content=body, headers={"Content-Type": media_type}
            )
            assert sent.status_code == 200, (media_type, sent.text)


# --- CORS -----------------------------------------------------------------------------------


def preflight(origin: str, method: str = "POST", headers: str = "content-type") -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": method,
        "Access-Control-Request-Headers": headers,
    }


async def test_cors_is_off_by_default() -> None:
    async with running(principals=PRINCIPALS) as http:
        granted = await http.options("/message:send", headers=preflight(APP_ORIGIN))
        assert granted.status_code == 403
        assert not any(h.startswith("access-control-") for h in granted.headers)
        listed = await http.get("/tasks", headers={"Origin": APP_ORIGIN, "X-API-Key": KEY})
        assert listed.status_code == 403
        assert "access-control-allow-origin" not in listed.headers


async def test_a_configured_origin_gets_its_preflight_and_cors_headers() -> None:
    async with running(principals=PRINCIPALS, cors_origins=[APP_ORIGIN]) as http:
        asked = preflight(APP_ORIGIN, headers="Content-Type, X-API-Key, A2A-Version")
        granted = await http.options("/message:send", headers=asked)
        assert granted.status_code == 204
        assert granted.headers["access-control-allow-origin"] == APP_ORIGIN
        assert "POST" in granted.headers["access-control-allow-methods"]
        allowed = granted.headers["access-control-allow-headers"]
        assert {"content-type", "x-api-key", "a2a-version", "authorization"} <= {
            h.strip() for h in allowed.split(",")
        }
        assert granted.headers["access-control-max-age"] == "600"
        assert "Origin" in granted.headers["vary"]
        assert "access-control-allow-credentials" not in granted.headers

        page = {"Origin": APP_ORIGIN, "X-API-Key": KEY}
        sent = await http.post("/message:send", json={"message": message()}, headers=page)
        assert sent.status_code == 200
        assert sent.headers["access-control-allow-origin"] == APP_ORIGIN
        assert "A2A-Extensions" in sent.headers["access-control-expose-headers"]
        rpc_sent = await http.post("/", json=rpc("ListTasks", {}), headers=page)
        assert rpc_sent.headers["access-control-allow-origin"] == APP_ORIGIN
        async with http.stream(
            "POST", "/message:stream", json={"message": message()}, headers=page
        ) as stream:
            assert stream.headers["access-control-allow-origin"] == APP_ORIGIN
            await stream.aread()

        other = await http.options("/message:send", headers=preflight(EVIL))
        assert other.status_code == 403 and "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize(
    ("asked", "words"),
    [
        (preflight(APP_ORIGIN, method="PUT"), "method"),
        (preflight(APP_ORIGIN, headers="content-type, x-custom"), "x-custom"),
    ],
)
async def test_a_preflight_for_what_accord_does_not_take_is_refused(
    asked: dict[str, str], words: str
) -> None:
    async with running(principals=PRINCIPALS, cors_origins=[APP_ORIGIN]) as http:
        refused = await http.options("/message:send", headers=asked)
        assert refused.status_code == 403 and words in refused.text
        assert "access-control-allow-origin" not in refused.headers


async def test_cors_headers_adds_request_headers_a_page_may_send() -> None:
    async with running(
        principals=PRINCIPALS, cors_origins=[APP_ORIGIN], cors_headers=["X-Custom"]
    ) as http:
        asked = preflight(APP_ORIGIN, headers="content-type, x-custom")
        assert (await http.options("/message:send", headers=asked)).status_code == 204


async def test_open_mode_with_a_listed_origin_admits_that_origin_only() -> None:
    async with running(cors_origins=["http://localhost:3000"]) as http:
        page = {"Origin": "http://localhost:3000"}
        sent = await http.post("/message:send", json={"message": message()}, headers=page)
        assert sent.status_code == 200
        assert sent.headers["access-control-allow-origin"] == "http://localhost:3000"
        evil = await http.post(
            "/message:send", json={"message": message()}, headers={"Origin": EVIL}
        )
        assert evil.status_code == 403


async def test_any_origin_with_credentials_never_grants_credentialed_requests() -> None:
    async with running(principals=PRINCIPALS, cors_origins=["*"]) as http:
        granted = await http.options("/tasks", headers=preflight(EVIL, method="GET"))
        assert granted.status_code == 204
        assert granted.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in granted.headers
        # Only a page holding a key gets anything: the browser adds none by itself.
        anonymous = await http.get("/tasks", headers={"Origin": EVIL})
        assert anonymous.status_code == 401
        keyed = await http.get("/tasks", headers={"Origin": EVIL, "X-API-Key": KEY})
        assert keyed.status_code == 200 and keyed.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"cors_origins": ["*"]}, '"*" would let every web page'),
        ({"cors_origins": ["app.example"]}, "is not an origin"),
        ({"cors_origins": ["https://app.example/ui"]}, "is not an origin"),
        ({"cors_origins": ["null"]}, "is not an origin"),
    ],
)
def test_cors_settings_that_do_not_make_sense_are_refused(
    settings: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match="cors_origins") as refused:
        build_app(dataclasses.replace(Settings(store="memory://"), **settings))
    assert words in str(refused.value)


def test_serve_refuses_any_origin_without_credentials(tmp_path: Path) -> None:
    config = tmp_path / "accord.toml"
    config.write_text('cors_origins = ["*"]\n')
    result = CliRunner().invoke(main, ["serve", "--config", str(config), "--store", "memory://"])
    assert result.exit_code == 2
    assert "cors_origins" in result.output


def test_browser_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCORD_CORS_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("ACCORD_ALLOWED_HOSTS", "box.lan")
    monkeypatch.setenv("ACCORD_CORS_MAX_AGE_S", "60")
    settings = load(None)
    assert settings.cors_origins == ["https://a.example", "https://b.example"]
    assert settings.allowed_hosts == ["box.lan"]
    assert settings.cors_max_age_s == 60
