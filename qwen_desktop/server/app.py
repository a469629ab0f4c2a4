"""The HTTP API: OpenAI's chat and completion endpoints over one ``EngineHost``, streamed with SSE.

Every request is a job on the host's queue, next to the window's own answers (client "api"), so the two
take turns on the model. A streamed answer is sent as its pieces arrive; a client that goes away cancels
its job at the next token.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, MutableMapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from qwen_desktop import __version__
from qwen_desktop.engine.generate import SamplingParams
from qwen_desktop.engine.host import (
    API,
    EngineHost,
    Failed,
    Finished,
    HostClosedError,
    HostError,
    HostEvent,
    Job,
    NoModelError,
    Piece,
    PromptTooLongError,
    QueueFullError,
)
from qwen_desktop.server.requests import (
    ApiError,
    ChatRequest,
    CompletionRequest,
    Sampling,
    parse_chat,
    parse_completion,
    parse_json,
)

log = logging.getLogger("qwen_desktop.server")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
STATIC = {"chat.js": "text/javascript", "chat.css": "text/css"}


@dataclass(frozen=True)
class ServerConfig:
    """How the server guards itself.

    Attributes:
        api_key: when set, ``/v1/*`` needs ``Authorization: Bearer <key>`` (401 otherwise).
        cors_origins: origins a browser page may call the API from; none by default (no CORS headers).
        loopback_only: refuse requests whose ``Host`` header is not a loopback name, so a web page that
            re-points its own domain at 127.0.0.1 (DNS rebinding) cannot reach the API. On for a
            server bound to a loopback address.
        max_body_bytes: bigger request bodies get 413.
        retry_after: seconds a client is told to wait when the queue is full (503).
    """

    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    loopback_only: bool = True
    max_body_bytes: int = 4 << 20
    retry_after: int = 2


def _host_name(header: str) -> str:
    """``[::1]:8765`` -> ``::1``; ``localhost:80`` -> ``localhost``."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _Events:
    """Carries a job's events from the host thread into the request's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[HostEvent] = asyncio.Queue()

    def __call__(self, event: HostEvent) -> None:  # host thread; raising cancels the job (loop gone)
        self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


class _Guard:
    """ASGI middleware: the host, key and size checks every request passes, and one log line per request.

    Plain ASGI (not ``BaseHTTPMiddleware``), so a streamed answer and its client's disconnect pass straight
    through to the endpoint.
    """

    def __init__(self, app: Any, config: ServerConfig) -> None:
        self.app = app
        self.cfg = config

    def refusal(self, scope: dict[str, Any]) -> ApiError | None:
        cfg = self.cfg
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if cfg.loopback_only and _host_name(headers.get("host", "")) not in LOOPBACK_NAMES:
            return ApiError(403, "this server answers only requests addressed to localhost", code="bad_host")
        if cfg.api_key and scope.get("path", "").startswith("/v1/") and scope.get("method") != "OPTIONS":
            scheme, _, key = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                key.strip().encode(), cfg.api_key.encode()
            ):
                return ApiError(
                    401,
                    "a valid API key is needed (Authorization: Bearer <key>)",
                    "authentication_error",
                    "invalid_api_key",
                )
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > cfg.max_body_bytes):
            return ApiError(
                413, f"the request body is larger than {cfg.max_body_bytes} bytes", code="body_too_large"
            )
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = [0]

        async def send_logged(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            error = self.refusal(scope)
            if error is not None:
                await JSONResponse(error.body(), error.status, headers=error.headers)(
                    scope, receive, send_logged
                )
            else:
                await self.app(scope, receive, send_logged)
        finally:
            client = scope.get("client") or ("-", 0)
            log.info(
                '%s "%s %s" %s %.0f ms',
                client[0],
                scope.get("method"),
                scope.get("path"),
                status[0] or "disconnected",
                (time.perf_counter() - began) * 1000,
            )


def _params(sampling: Sampling) -> SamplingParams:
    params = SamplingParams()
    changes: dict[str, Any] = {}
    if sampling.max_tokens is not None:
        changes["max_tokens"] = sampling.max_tokens
    if sampling.temperature is not None:
        changes["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        changes["top_p"] = sampling.top_p
    if sampling.seed is not None:
        changes["seed"] = sampling.seed
    return replace(params, **changes)


def _host_error(exc: HostError, retry_after: int) -> ApiError:
    if isinstance(exc, QueueFullError):
        return ApiError(
            503,
            f"the server is busy: {exc}",
            "server_busy",
            "queue_full",
            headers={"Retry-After": str(retry_after)},
        )
    if isinstance(exc, PromptTooLongError):
        return ApiError(400, str(exc), code="context_length_exceeded", param="messages")
    if isinstance(exc, NoModelError | HostClosedError):
        return ApiError(503, str(exc), "server_unavailable", "no_model")
    return ApiError(500, str(exc), "server_error")


def _finish_reason(reason: str) -> str:
    return "length" if reason == "length" else "stop"


def _usage(event: Finished | Failed) -> dict[str, int]:
    stats = event.stats
    prompt = stats.prompt_tokens if stats else 0
    generated = stats.generated_tokens if stats else 0
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": prompt + generated}


def _sse(doc: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def create_app(host: EngineHost, config: ServerConfig | None = None) -> FastAPI:
    """The FastAPI app serving ``host``'s model (see docs/server.md)."""
    cfg = config or ServerConfig()
    app = FastAPI(title="Qwen Desktop", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    if cfg.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cfg.cors_origins),
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
        )

    app.add_middleware(_Guard, config=cfg)

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), exc.status, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        message = {404: "no such endpoint", 405: "method not allowed"}.get(exc.status_code, str(exc.detail))
        return JSONResponse(ApiError(exc.status_code, message, code=code).body(), exc.status_code)

    @app.exception_handler(Exception)
    async def any_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return JSONResponse(ApiError(500, "internal server error", "server_error").body(), 500)

    async def read_json(request: Request) -> dict[str, Any]:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > cfg.max_body_bytes:
                raise ApiError(
                    413, f"the request body is larger than {cfg.max_body_bytes} bytes", code="body_too_large"
                )
        return parse_json(bytes(body))

    def check_model(name: str | None) -> str:
        info = host.model
        if info is None:
            raise _host_error(NoModelError(), cfg.retry_after)
        if name and name not in (info.id, info.name):
            raise ApiError(
                404,
                f"the model '{name}' is not loaded; this server has '{info.id}'",
                param="model",
                code="model_not_found",
            )
        return info.id

    async def submit(start: Callable[[], Job]) -> Job:
        try:
            return await run_in_threadpool(start)
        except HostError as exc:
            raise _host_error(exc, cfg.retry_after) from None

    async def next_event(events: _Events, request: Request) -> HostEvent | None:
        """The next event, or None once the client has gone away (answers that do not stream)."""
        while True:
            try:
                return await asyncio.wait_for(events.queue.get(), 0.25)
            except TimeoutError:
                if await request.is_disconnected():
                    return None

    async def answer(
        request: Request,
        kind: str,
        model: str,
        sampling: Sampling,
        start: Callable[[_Events], Job],
    ) -> Response:
        events = _Events(asyncio.get_running_loop())
        job = await submit(lambda: start(events))
        ident = ("chatcmpl-" if kind == "chat" else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        obj = "chat.completion" if kind == "chat" else "text_completion"

        def choice(text: str | None, reason: str | None, first: bool = False) -> dict[str, Any]:
            if kind == "chat":
                delta: dict[str, Any] = {}
                if first:
                    delta["role"] = "assistant"
                if text is not None:
                    delta["content"] = text
                return {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
            return {"index": 0, "text": text or "", "finish_reason": reason, "logprobs": None}

        def chunk(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> bytes:
            doc: dict[str, Any] = {
                "id": ident,
                "object": obj + ".chunk" if kind == "chat" else obj,
                "created": created,
                "model": model,
                "choices": choices,
            }
            if sampling.include_usage:
                doc["usage"] = usage
            return _sse(doc)

        if sampling.stream:

            async def stream() -> AsyncIterator[bytes]:
                try:
                    if kind == "chat":
                        yield chunk([choice("", None, first=True)])
                    while True:
                        event = await events.queue.get()
                        if isinstance(event, Piece):
                            yield chunk([choice(event.text, None)])
                        elif isinstance(event, Finished):
                            yield chunk(
                                [choice(None if kind == "chat" else "", _finish_reason(event.reason))]
                            )
                            if sampling.include_usage:
                                yield chunk([], _usage(event))
                            yield b"data: [DONE]\n\n"
                            return
                        elif isinstance(event, Failed):
                            error = (
                                _host_error(event.error, cfg.retry_after)
                                if event.error
                                else ApiError(500, event.message, "server_error")
                            )
                            yield _sse(error.body())
                            yield b"data: [DONE]\n\n"
                            return
                finally:
                    job.cancel()  # the client went away (or the answer ended: then nothing happens)

            return StreamingResponse(
                stream(),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )

        parts: list[str] = []
        try:
            while True:
                event = await next_event(events, request)
                if event is None:  # the client hung up: free the model for the next request
                    job.cancel()
                    return Response(status_code=499)
                if isinstance(event, Piece):
                    parts.append(event.text)
                elif isinstance(event, Failed):
                    if event.error is not None:
                        raise _host_error(event.error, cfg.retry_after)
                    raise ApiError(500, event.message, "server_error")
                elif isinstance(event, Finished):
                    break
        finally:
            job.cancel()
        text = "".join(parts)
        reason = _finish_reason(event.reason)
        if kind == "chat":
            body_choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": reason,
                "logprobs": None,
            }
        else:
            body_choice = {"index": 0, "text": text, "finish_reason": reason, "logprobs": None}
        return JSONResponse(
            {
                "id": ident,
                "object": obj,
                "created": created,
                "model": model,
                "choices": [body_choice],
                "usage": _usage(event),
            }
        )

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        req: ChatRequest = parse_chat(await read_json(request))
        model = check_model(req.model)
        params = _params(req.sampling)

        def start(events: _Events) -> Job:
            return host.submit_answer(
                req.messages,
                params,
                client=API,
                stop=req.sampling.stop,
                on_event=events,
                strict=True,
                reuse_cache=req.sampling.seed is None,
            )

        return await answer(request, "chat", model, req.sampling, start)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        req: CompletionRequest = parse_completion(await read_json(request))
        model = check_model(req.model)
        params = _params(req.sampling)

        def start(events: _Events) -> Job:
            return host.submit_completion(
                req.prompt,
                params,
                client=API,
                stop=req.sampling.stop,
                on_event=events,
                reuse_cache=req.sampling.seed is None,
            )

        return await answer(request, "completion", model, req.sampling, start)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        info = host.model
        data = []
        if info is not None:
            data.append({"id": info.id, "object": "model", "created": 0, "owned_by": "qwen-desktop"})
        return {"object": "list", "data": data}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        info = host.model
        return {
            "status": "ok" if info is not None else "no_model",
            "model": info.id if info else None,
            "queue": host.queue_depth(),
            "version": __version__,
        }

    @app.get("/")
    async def page() -> Response:
        return Response(_static("index.html"), media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @app.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in STATIC:
            raise StarletteHTTPException(404)
        return Response(_static(name), media_type=STATIC[name] + "; charset=utf-8", headers=PAGE_HEADERS)

    return app


def _static(name: str) -> bytes:
    return resources.files("qwen_desktop.server").joinpath("static", name).read_bytes()
