"""The server under attack, on a real uvicorn on loopback started the way `nova serve` starts it (the app,
the protocol with its read deadlines, the connection cap, all from the config in NOVA_HOME): slow
clients, too many connections, DNS rebinding, a bind beyond loopback, bad text, and many chats past the
open-session limit."""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server tests need the `server` extra")

import uvicorn

from nova.agent.demo import make_demo_project
from nova.messages import Message
from nova.server.serve import ServeOptions, build_server_app, server_config, uvicorn_config
from nova.server.token import TOKEN_FILE, load_or_create_token
from nova.sessions.session import Session
from nova.settings import load_settings

PROMPT_WAIT_S = 20.0


@dataclass
class Served:
    port: int
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    def request(self, method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None,
                auth: bool = True) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=PROMPT_WAIT_S)
        try:
            sent = {**(self.auth if auth else {}), **({"content-type": "application/json"} if body else {}),
                    **(headers or {})}
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def post_json(self, path: str, value: Any) -> tuple[int, bytes]:
        return self.request("POST", path, body=json.dumps(value).encode())

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=PROMPT_WAIT_S)


@contextmanager
def serving(home: Path, project: Path, server: dict[str, Any] | None = None, *,
            bind_host: str = "127.0.0.1") -> Iterator[Served]:
    """`nova serve`'s app and uvicorn configuration, listening on a free loopback port in a thread.
    `bind_host` is the address the app is told it is bound to (it decides the Host names answered)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"server": server or {}}), encoding="utf-8")
    env = {"NOVA_HOME": str(home)}
    settings = load_settings(env=env, overrides={"provider": "demo", "model": "nova-demo"})
    token, _ = load_or_create_token(settings.home)
    app = build_server_app(settings, ServeOptions(host=bind_host, cwd=project, yes=True), token, env)
    # IPPROTO_TCP, so that asyncio sets TCP_NODELAY on the connections (tests/server/helpers.free_socket).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server_ = uvicorn.Server(uvicorn_config(app, host="127.0.0.1", port=port, config=server_config(settings)))
    thread = threading.Thread(target=server_.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + PROMPT_WAIT_S
    while not server_.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield Served(port=port, token=token)
    finally:
        server_.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_demo_project(tmp_path / "project")


def trickle(sock: socket.socket, data: bytes, *, every_s: float = 0.2, give_up_s: float = 8.0,
            until: bytes | None = None) -> tuple[bool, bytes]:
    """Send `data` a byte at a time, as a slow-loris client does, until the server closes the connection,
    `until` has arrived or `give_up_s` passes. (whether the server closed it, what the server sent)"""
    began = time.monotonic()
    received = b""
    position = 0
    while time.monotonic() - began < give_up_s:
        if position < len(data):
            try:
                sock.sendall(data[position:position + 1])
            except OSError:  # closed under us
                return True, received
            position += 1
        readable, _, _ = select.select([sock], [], [], every_s)
        if readable:
            try:
                chunk = sock.recv(65536)
            except OSError:
                return True, received
            if not chunk:
                return True, received
            received += chunk
            if until is not None and until in received:
                return False, received
    return False, received


# -- slow clients ----------------------------------------------------------------------------------------
SLOW = {"header_timeout_s": 1, "body_timeout_s": 1}
HEAD = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nuser-agent: slow-loris\r\naccept: */*\r\n\r\n"


@pytest.mark.parametrize("attack", ["slow headers", "silent connection", "slow headers after a first request",
                                    "trickled body"])
def test_a_slow_client_is_cut_off_at_its_read_deadline(nova_home: Path, project: Path, attack: str) -> None:
    with serving(nova_home, project, SLOW) as served, served.connect() as sock:
        if attack == "slow headers":
            closed, answer = trickle(sock, HEAD)
        elif attack == "silent connection":
            closed, answer = trickle(sock, b"")
        elif attack == "slow headers after a first request":
            sock.sendall(HEAD)
            first = b""
            while b'"status":"ok"' not in first:
                first += sock.recv(65536)
            closed, answer = trickle(sock, HEAD)
        else:
            body = json.dumps({"title": "x" * 200}).encode()
            head = (f"POST /api/sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {served.token}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n").encode()
            sock.sendall(head)
            closed, answer = trickle(sock, body)
        # Without the deadline the trickle (a byte every 0.2 s: 16 s for the head) holds the connection
        # open until the client gives up after 8 s; with it the server closes it, answering 408.
        assert closed, (attack, answer)
        if attack == "silent connection":
            assert answer == b""
        else:
            assert answer.rsplit(b"HTTP/1.1 ", 1)[-1].startswith(b"408"), answer
        # The server is still there for everyone else.
        assert served.request("GET", "/health")[0] == 200
        if attack == "trickled body":
            assert json.loads(served.request("GET", "/api/sessions")[1]) == []  # nothing half-made


def test_a_slow_but_honest_client_within_the_deadlines_is_served(nova_home: Path, project: Path) -> None:
    with serving(nova_home, project, {"header_timeout_s": 3, "body_timeout_s": 3}) as served, served.connect() as sock:
        _, answer = trickle(sock, HEAD, every_s=0.01, give_up_s=2, until=b'"status":"ok"')
        assert answer.startswith(b"HTTP/1.1 200"), answer


# -- too many connections --------------------------------------------------------------------------------
def test_connections_past_the_cap_are_answered_503_and_served_again_below_it(nova_home: Path, project: Path) -> None:
    with serving(nova_home, project, {"max_connections": 3, "header_timeout_s": 30}) as served:
        held = [served.connect() for _ in range(3)]
        time.sleep(0.3)  # accepted by the server
        status, _ = served.request("GET", "/health")
        assert status == 503
        assert served.request("GET", "/api/sessions")[0] == 503
        held.pop().close()
        time.sleep(0.3)
        assert served.request("GET", "/health")[0] == 200
        for sock in held:
            sock.close()


# -- DNS rebinding -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def named_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    """One server for each address it is told it is bound to, shared by the Host-name cases (they only
    read), each with a name in allowed_hosts."""
    root = tmp_path_factory.mktemp("named")
    project = make_demo_project(root / "project")
    config = {"allowed_hosts": ["Nova.Example.LAN"]}
    with serving(root / "loopback", project, config) as loopback, \
            serving(root / "any", project, config, bind_host="0.0.0.0") as any_address:
        yield {"127.0.0.1": loopback, "0.0.0.0": any_address}


@pytest.mark.parametrize(
    ("bind_host", "host_header", "answered"),
    [
        ("127.0.0.1", "evil.example", False),
        ("127.0.0.1", "evil.example:{port}", False),
        ("127.0.0.1", "127.0.0.1.evil.example", False),
        ("127.0.0.1", "localhost.evil.example", False),
        ("127.0.0.1", "192.168.1.20:{port}", False),  # not a loopback address, so not this server's name
        ("127.0.0.1", "127.0.0.1:{port}", True),
        ("127.0.0.1", "localhost:{port}", True),
        ("127.0.0.1", "LOCALHOST.", True),
        ("127.0.0.1", "[::1]:{port}", True),
        ("127.0.0.1", "nova.example.lan", True),  # listed in allowed_hosts
        ("0.0.0.0", "evil.example:{port}", False),
        ("0.0.0.0", "192.168.1.20:{port}", True),
        ("0.0.0.0", "nova.example.lan:{port}", True),
    ],
)
def test_a_request_addressed_to_a_foreign_host_name_is_refused(
    named_servers: dict[str, Served], bind_host: str, host_header: str, answered: bool,
) -> None:
    served = named_servers[bind_host]
    host = host_header.format(port=served.port)
    for path in ("/health", "/api/sessions", "/"):
        status, body = served.request("GET", path, headers={"host": host})
        if answered:
            assert status == 200, (host, path, status, body)
        else:
            assert status == 421, (host, path, status, body)
            assert "allowed_hosts" in json.loads(body)["detail"]


def test_binding_beyond_loopback_warns_it_is_plain_http_and_still_needs_the_token(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOVA_", "ANTHROPIC_", "OPENAI_"))}
    env["NOVA_HOME"] = str(home)
    process = subprocess.Popen(
        [sys.executable, "-m", "nova.cli.main", "serve", "--host", "0.0.0.0", "--port", str(port), "--provider", "demo",
         "--cwd", str(project)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "nova serve did not come up"
            time.sleep(0.1)
        served = Served(port=port, token=(home / TOKEN_FILE).read_text().strip())
        assert served.request("GET", "/api/sessions", auth=False)[0] == 401
        assert served.request("GET", "/api/sessions")[0] == 200
        assert served.request("GET", "/api/sessions", headers={"host": "evil.example"})[0] == 421
    finally:
        process.terminate()
        try:
            out, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
    said = " ".join(out.split())
    assert "plain HTTP" in said and "0.0.0.0" in said and "needs the token" in said and "allowed_hosts" in said, said


def test_on_loopback_there_is_no_warning(tmp_path: Path) -> None:
    from nova.server.serve import bind_warning

    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert bind_warning(host, tmp_path) is None
    for host in ("0.0.0.0", "::", "192.168.1.20", "myhost"):
        assert bind_warning(host, tmp_path) is not None


# -- bad text ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/messages", b'{"text": "hi \\ud800 there"}', ["body", "text"]),
        ("/messages", b'{"text": "a lone low \\udfff"}', ["body", "text"]),
        ("/messages", b'{"messages": [{"role": "user", "parts": [{"type": "text", "text": "\\ud83d"}]}]}',
         ["body", "messages", 0, "parts", 0, "text"]),
        ("/messages", b'{"text": "NUL \\u0000 inside"}', ["body", "text"]),
        ("/messages", b'{"text": "bad \xff\xfe bytes"}', ["body"]),
        ("/messages", '{"text": "latin-1 café"}'.encode("latin-1"), ["body"]),
        ("/messages", '{"text": "utf-16"}'.encode("utf-16"), ["body"]),
        ("/messages", b'{"text": 5}', ["body", "text"]),
        ("/messages", b'{"text": "x", "\\ud800": 1}', ["body"]),
        ("/messages", b"[" * 100_000, ["body"]),
        ("/messages", b'{"text": "x", "n": 1' + b"0" * 5000 + b"}", ["body"]),
        ("/messages", b"not json", ["body"]),
        ("/compact", b'{"focus": "\\udc80"}', ["body", "focus"]),
        ("", b'{"title": "\\ud800"}', ["body", "title"]),
        ("", b'{"title": "a\\u0000b"}', ["body", "title"]),
        ("", b'{"title": "\xc3\x28"}', ["body"]),
    ],
)
def test_bad_text_is_a_422_naming_the_field_and_the_session_loses_nothing(
    nova_home: Path, project: Path, path: str, body: bytes, field: list[str | int],
) -> None:
    with serving(nova_home, project) as served:
        status, raw = served.post_json("/api/sessions", {"title": "kept"})
        sid = json.loads(raw)["id"]
        assert served.post_json(f"/api/sessions/{sid}/messages", {"text": "first"})[0] == 200
        target = f"/api/sessions/{sid}{path}" if path else "/api/sessions"
        status, raw = served.request("POST", target, body=body)
        assert status == 422, (status, raw)
        detail = json.loads(raw)["detail"]
        assert detail[0]["loc"] == field, detail
        # Nothing of the session was lost, and it goes on.
        assert served.post_json(f"/api/sessions/{sid}/messages", {"text": "second"})[0] == 200
        record = json.loads(served.request("GET", f"/api/sessions/{sid}")[1])
        assert [m["text"] for m in record["messages"] if m["role"] == "user" and m["text"]] == ["first", "second"]
        assert [s["title"] for s in json.loads(served.request("GET", "/api/sessions")[1])] == ["kept"]


def test_an_oversized_body_is_a_413(nova_home: Path, project: Path) -> None:
    with serving(nova_home, project, {"max_body_bytes": 4096}) as served:
        status, raw = served.post_json("/api/sessions", {"title": "x" * 5000})
        assert status == 413, raw


def test_a_recorded_lone_surrogate_reads_back_through_the_api_instead_of_a_500(nova_home: Path, project: Path) -> None:
    # Records keep any text (a terminal's bad bytes, a tool's undecodable output); the API must show them.
    session = Session.create(nova_home, title="from the terminal", cwd=project)
    session.record_message(Message.user("bytes from a tool: \udcff and \ud800"))
    session.close()
    with serving(nova_home, project) as served:
        for path in (f"/api/sessions/{session.id}", f"/api/sessions/{session.id}/context"):
            status, raw = served.request("GET", path)
            assert status == 200, (path, raw)
            raw.decode("utf-8")  # valid UTF-8 on the wire
        messages = json.loads(served.request("GET", f"/api/sessions/{session.id}")[1])["messages"]
        assert messages[0]["text"] == "bytes from a tool: \udcff and \ud800"  # lossless, as a JSON escape


# -- many chats past the open-session limit ----------------------------------------------------------------
# Slow tier: a load test: many chats at once over more sessions than are kept open.
@pytest.mark.slow
def test_many_concurrent_chats_over_more_sessions_than_kept_open_all_succeed(nova_home: Path, project: Path) -> None:
    sessions, turns = 40, 5
    with serving(nova_home, project, {"max_live_sessions": 4}) as served:
        errors: list[str] = []
        sent: dict[str, list[str]] = {}
        lock = threading.Lock()
        start = threading.Barrier(sessions)

        def chat(n: int) -> None:
            # Each client creates its session and sends its turns at once, while the others do the same:
            # the hub keeps 4 of 40 open, so sessions are closed and reopened all through.
            start.wait()
            conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
            headers = {**served.auth, "content-type": "application/json"}
            try:
                conn.request("POST", "/api/sessions", body=json.dumps({"title": f"chat {n}"}), headers=headers)
                response = conn.getresponse()
                raw = response.read()
                if response.status != 201:
                    with lock:
                        errors.append(f"create: {response.status} {raw[:200]!r}")
                    return
                sid = json.loads(raw)["id"]
                for turn in range(turns):
                    prompt = f"chat {n} turn {turn}: which files are here?"
                    conn.request("POST", f"/api/sessions/{sid}/messages", body=json.dumps({"text": prompt}),
                                 headers=headers)
                    response = conn.getresponse()
                    raw = response.read()
                    ok = response.status == 200 and raw.rstrip().endswith(b"data: [DONE]") and b'"type":"error"' not in raw
                    conn.request("GET", f"/api/sessions/{sid}/context", headers=headers)
                    context = conn.getresponse()
                    context.read()
                    with lock:
                        if ok:
                            sent.setdefault(sid, []).append(prompt)
                        else:
                            errors.append(f"turn: {response.status} {raw[:200]!r}")
                        if context.status != 200:
                            errors.append(f"context: {context.status}")
            finally:
                conn.close()

        threads = [threading.Thread(target=chat, args=(n,), daemon=True) for n in range(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == []
        assert sum(len(p) for p in sent.values()) == sessions * turns
        for sid, prompts in sent.items():
            record = json.loads(served.request("GET", f"/api/sessions/{sid}")[1])
            assert [m["text"] for m in record["messages"] if m["role"] == "user" and m["text"]] == prompts
