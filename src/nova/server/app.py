"""`create_app`: the FastAPI application behind `nova serve`.

    GET    /health                          no token needed
    GET    /                                the web page (a browser without the token gets the sign-in form)
    GET    /login;  POST: sign a browser in     (`/?token=…`, the link `nova serve` prints, does too)
    POST   /logout                              sign the browser out
    GET    /api/sessions                    list;  POST: create
    GET    /api/sessions/{id}               meta, the recorded messages and the calls waiting for approval;
                                            DELETE: remove
    POST   /api/sessions/{id}/messages      one turn, streamed as the AI SDK UI message stream (v1)
    GET    /api/sessions/{id}/events        the latest turn's stream from any worker (PostgreSQL only;
                                            resumes after `Last-Event-ID`)
    POST   /api/sessions/{id}/cancel        stop the running turn at its next step
    POST   /api/sessions/{id}/approvals/{call_id}   answer a tool call waiting for approval
    GET    /api/sessions/{id}/context       the one context figure (TOK-3) and what is in context
    POST   /api/sessions/{id}/compact       compact now
    GET    /api/memory, /api/memory/{name}  long-term memory;  DELETE revokes (`?purge=true` removes)

Every route but `/health` needs `Authorization: Bearer <token>`, or in a browser the sign-in cookie
(`nova.server.browser_login`); every request needs a Host header that names this server (`nova.server.hosts`). Bodies are JSON text (`nova.server.text_check`): anything else
is a 422 naming the field, never a 500.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, HTTPException, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import StreamingResponse

from nova import events as ev
from nova.agent.builder import AgentOptions
from nova.errors import NovaError, SessionBusy, SessionNotFound
from nova.host.hub import HostLimits, SessionHub
from nova.memory.provenance import reinstate, revoke
from nova.memory.store import Memory, MemoryNotFound, MemoryStore, UnsafeMemoryName, format_time
from nova.messages import new_id
from nova.providers.base import Provider
from nova.server.approvals import ApprovalDesk
from nova.server.approvals_api import add_approval_routes
from nova.server.channel import ChunkChannel
from nova.server.config import ServerConfig
from nova.server.guards import BearerAuth, BodyLimit, HostCheck
from nova.server.hosts import HostPolicy
from nova.server.page import load_page
from nova.server.responses import SafeJSONResponse, validation_error
from nova.server.schemas import (
    SESSION_ID_PATTERN,
    CompactOut,
    CompactRequest,
    ContextOut,
    CreateSession,
    MemoryOut,
    SendMessage,
    SessionDetail,
    SessionOut,
    message_out,
    session_out,
)
from nova.server.streams import OpenStreams
from nova.server.text_check import TextCheck
from nova.server.ui_stream import DONE, STREAM_HEADERS, UIStreamEncoder, sse
from nova.sessions.repair import pending_interrupted_answers
from nova.sessions.schema import BoundaryRecord, MessageRecord, Record, parse_record
from nova.sessions.session import Session
from nova.settings import Settings
from nova.version import __version__

if TYPE_CHECKING:
    from nova.server.postgres_workers import PostgresWorkers

__all__ = ["create_app"]

SessionId = Annotated[str, Path(pattern=SESSION_ID_PATTERN, max_length=128)]
MemoryName = Annotated[str, Path(min_length=1, max_length=200)]


def create_app(
    settings: Settings,
    *,
    token: str,
    options: AgentOptions,
    make_provider: Callable[[], Provider],
    config: ServerConfig | None = None,
    bind_host: str = "127.0.0.1",
    provider_for: Callable[[Settings], Provider] | None = None,
) -> FastAPI:
    """`bind_host` is the address the server listens on: it decides which Host headers are answered.
    `provider_for` lets a resumed session continue on the provider and model it was recorded with."""
    config = config or ServerConfig()
    limits = HostLimits(max_live=config.max_live_sessions, idle_timeout_s=config.idle_session_timeout_s)
    desk = ApprovalDesk(timeout_s=config.approval_timeout_s)
    hub, workers = _make_hub(settings, options=options, make_provider=make_provider, limits=limits,
                             approvals=desk, provider_for=provider_for)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(hub.close)

    app = FastAPI(title="Nova", version=__version__, lifespan=lifespan, default_response_class=SafeJSONResponse,
                  description="Nova's HTTP API. Every route but /health needs `Authorization: Bearer <token>` "
                              "(`nova serve --print-token`).")
    app.state.hub = hub
    app.state.streams = OpenStreams()  # ended at once when the server stops (`nova.server.streams`)
    _errors(app)
    _routes(app, hub, workers, settings, options, desk)
    add_approval_routes(app, hub, desk)
    # Added last = outermost: the Host check, the size limit, then the token, wrap everything including
    # 404s and docs; the body check runs only for a caller with the token.
    app.add_middleware(TextCheck)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_credentials=False,
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["authorization", "content-type"],
                           expose_headers=["x-vercel-ai-ui-message-stream"])
    app.add_middleware(BearerAuth, token=token)
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    app.add_middleware(HostCheck, policy=HostPolicy.for_bind(bind_host, config.allowed_hosts))
    return app


def _make_hub(settings: Settings, **kwargs: Any) -> tuple[SessionHub, PostgresWorkers | None]:
    """The single-process hub on SQLite; with a database URL, one worker among several sharing it
    (`postgres_workers`), returned beside the hub for the routes only they serve."""
    from nova.sessions.backend import database_url

    url = database_url(settings.home)
    if url is None:
        return SessionHub(settings, **kwargs), None
    from nova.server.postgres_workers import PostgresWorkers

    workers = PostgresWorkers(settings.home, url)
    return SessionHub(settings, shared=workers, **kwargs), workers


def _shared_stream(workers: PostgresWorkers | None, session_id: str, turn_id: str,
                   deliver: Callable[[bytes], None], end: Callable[[], None]) -> Callable[[bytes, bool], None]:
    """How a batch of a turn's events reaches its client: straight, or (several workers) stored first so
    clients on any worker can follow it, and sent with its id; `end` runs once the last batch was sent."""
    if workers is None:
        def direct(data: bytes, last: bool) -> None:
            deliver(data)
            if last:
                end()

        return direct
    return workers.event_log.stream(session_id, turn_id, deliver, end).publish


def _records(hub: SessionHub, workers: PostgresWorkers | None, settings: Settings, session_id: str) -> list[Record]:
    """The session's raw log from the start: the database's rows when workers share one, else the file."""
    if workers is not None:
        hub.check(session_id)
        return [parse_record(line, f"session {session_id} record {n}")
                for n, line in enumerate(workers.read_records(session_id), start=1)]
    with Session.open(settings.home, session_id, readonly=True) as record:
        return list(record.transcript.iter_records())


def _errors(app: FastAPI) -> None:
    def handler(status: int) -> Callable[[Request, Exception], Any]:
        async def respond(_: Request, exc: Exception) -> SafeJSONResponse:
            return SafeJSONResponse({"detail": str(exc)}, status_code=status)

        return respond

    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(SessionNotFound, handler(404))
    app.add_exception_handler(MemoryNotFound, handler(404))
    app.add_exception_handler(SessionBusy, handler(409))
    app.add_exception_handler(UnsafeMemoryName, handler(400))
    app.add_exception_handler(NovaError, handler(400))


def _memory_out(memory: Memory, *, body: bool) -> MemoryOut:
    return MemoryOut(name=memory.name, description=memory.description, type=memory.type, status=memory.status,
                     author=memory.author, body=memory.body if body else None, source=memory.source.describe(),
                     updated=format_time(memory.updated), review=memory.review_note or None)


def _routes(app: FastAPI, hub: SessionHub, workers: PostgresWorkers | None, settings: Settings,
            options: AgentOptions, desk: ApprovalDesk) -> None:
    @app.get("/health", tags=["server"])
    def health() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/", include_in_schema=False)
    def page() -> Response:
        loaded = load_page()
        return Response(loaded.html, media_type="text/html; charset=utf-8",
                        headers={"content-security-policy": loaded.csp, "referrer-policy": "no-referrer",
                                 "cache-control": "no-store", "x-content-type-options": "nosniff"})

    # -- sessions ---------------------------------------------------------------------------------
    @app.get("/api/sessions", tags=["sessions"])
    def list_sessions() -> list[SessionOut]:
        return [session_out(m, running=hub.is_running(m.id)) for m in hub.sessions()]

    @app.post("/api/sessions", status_code=201, tags=["sessions"])
    def create_session(body: CreateSession | None = None) -> SessionOut:
        live = hub.create((body or CreateSession()).title)
        return session_out(live.session.meta)

    @app.get("/api/sessions/{session_id}", tags=["sessions"])
    def get_session(session_id: SessionId) -> SessionDetail:
        hub.check(session_id)
        meta = hub.meta(session_id)
        # The raw log, read-only and from the start: what was said before a compaction is still there.
        messages, compactions, last = [], 0, []
        for item in _records(hub, workers, settings, session_id):
            if isinstance(item, MessageRecord):
                messages.append(message_out(item.message))
                last = [item.message]
            elif isinstance(item, BoundaryRecord):
                compactions += 1
        if workers is None and not hub.is_running(session_id) and (
                answers := pending_interrupted_answers(last)) is not None:
            # A log that stops inside a tool call (the server was killed during it): show the answer the
            # next resume records, never a call that seems to be still running.
            messages.append(message_out(answers))
        # Taken before `running`: a call still waiting then belongs to a turn that is still running.
        pending = desk.pending(session_id)
        return SessionDetail(session=session_out(meta, running=hub.is_running(session_id)), messages=messages,
                             compactions=compactions, pending_approvals=pending)

    @app.delete("/api/sessions/{session_id}", status_code=204, tags=["sessions"])
    def delete_session(session_id: SessionId) -> Response:
        hub.delete(session_id)
        return Response(status_code=204)

    # -- turns ------------------------------------------------------------------------------------
    @app.post(
        "/api/sessions/{session_id}/messages",
        tags=["turns"],
        response_class=StreamingResponse,
        responses={200: {"description": "The turn as a Vercel AI SDK UI message stream (SSE, protocol v1).",
                         "content": {"text/event-stream": {"schema": {"type": "string"}}}}},
    )
    async def send_message(session_id: SessionId, body: SendMessage) -> StreamingResponse:
        prompt = body.prompt()
        if not prompt:
            raise HTTPException(422, "the message has no text")
        channel: ChunkChannel[bytes] = ChunkChannel(asyncio.get_running_loop())
        encoder = UIStreamEncoder(new_id("msg"))
        deliver = _shared_stream(workers, session_id, encoder.message_id, channel.put, channel.close)
        unsent = [b"".join(sse(c) for c in encoder.start())]

        def put(data: bytes, last: bool) -> None:
            # The start chunk goes with the first batch: a turn refused as busy publishes nothing.
            deliver((unsent.pop() if unsent else b"") + data, last)

        def sink(event: ev.Event | None) -> None:
            # Runs on the turn's worker thread; the encoder is touched only here once the turn starts.
            if event is None:
                put(b"".join(sse(c) for c in encoder.finish("error")) + DONE, True)  # ends the channel
                return
            chunks = encoder.encode(event)
            if chunks:
                put(b"".join(sse(c) for c in chunks), False)

        await asyncio.to_thread(hub.start_turn, session_id, prompt, sink)
        streams: OpenStreams = app.state.streams
        streams.add(channel, session_id)

        async def stream() -> AsyncIterator[bytes]:
            # When the client disconnects this generator is dropped; the turn goes on and is recorded.
            try:
                while items := await channel.drain():
                    yield b"".join(items)
            finally:
                streams.discard(channel)

        return StreamingResponse(stream(), media_type="text/event-stream", headers=STREAM_HEADERS)

    @app.get("/api/sessions/{session_id}/events", tags=["turns"], response_class=StreamingResponse)
    async def follow_events(session_id: SessionId, request: Request,
                            after: Annotated[int | None, Query(ge=0)] = None) -> StreamingResponse:
        """The session's latest turn as it streams, from any worker (PostgreSQL backend): from its start,
        or after the event id given as `after` or the Last-Event-ID header (a reconnecting client)."""
        if workers is None:
            raise HTTPException(404, "turn events are kept only when Nova runs on PostgreSQL")
        event_log = workers.event_log
        await asyncio.to_thread(hub.check, session_id)
        header = request.headers.get("last-event-id", "")
        if after is None and header.isdigit():
            after = int(header)
        return StreamingResponse(event_log.follow(session_id, after), media_type="text/event-stream",
                                 headers=STREAM_HEADERS)

    @app.post("/api/sessions/{session_id}/cancel", tags=["turns"])
    def cancel(session_id: SessionId) -> dict[str, bool]:
        return {"cancelled": hub.cancel(session_id)}

    # -- context ----------------------------------------------------------------------------------
    @app.get("/api/sessions/{session_id}/context", tags=["context"])
    def get_context(session_id: SessionId) -> ContextOut:
        return ContextOut(**hub.context(session_id))

    @app.post("/api/sessions/{session_id}/compact", tags=["context"])
    def compact(session_id: SessionId, body: CompactRequest | None = None) -> CompactOut:
        changed, _ = hub.compact(session_id, (body or CompactRequest()).focus)
        return CompactOut(changed=changed, context=ContextOut(**hub.context(session_id)))

    # -- memory -----------------------------------------------------------------------------------
    def store() -> MemoryStore:
        return MemoryStore.for_workspace(home=settings.home, cwd=options.cwd)

    @app.get("/api/memory", tags=["memory"])
    def list_memory(include_revoked: bool = False) -> list[MemoryOut]:
        return [_memory_out(m, body=False) for m in store().memories(include_revoked=include_revoked)]

    @app.get("/api/memory/{name}", tags=["memory"])
    def get_memory(name: MemoryName) -> MemoryOut:
        return _memory_out(store().get(name), body=True)

    @app.delete("/api/memory/{name}", tags=["memory"])
    def delete_memory(name: MemoryName, purge: Annotated[bool, Query()] = False) -> MemoryOut:
        """Revoke (kept as a tombstone so it is not re-created, MEM-7); `purge=true` removes the file."""
        memories = store()
        # Revocation follows provenance: summaries and task state that quoted it are redacted too.
        revoke(memories, name)
        gone = memories.delete(name) if purge else memories.get(name)
        return _memory_out(gone, body=False)

    @app.post("/api/memory/{name}/approve", tags=["memory"])
    def approve_memory(name: MemoryName) -> MemoryOut:
        """A person approves exactly the memory's current text (as `nova memory approve` does, MEM-7)."""
        memories = store()
        approved = memories.set_status(name, "active")
        reinstate(memories, approved.name)
        return _memory_out(approved, body=False)
