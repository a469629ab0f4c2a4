"""Read OpenAI-style request bodies into typed requests, or refuse them with an ``ApiError``.

Request bodies come from any program on the machine (or the network, when allowed): every field is checked
for its type and range here, and anything wrong is one ``ApiError`` naming the field, never an exception
from deeper down. Unknown fields are ignored, as OpenAI's own server does with most of them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

MAX_STOPS = 4
MAX_STOP_CHARS = 200
MAX_MESSAGES = 2048
ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


class ApiError(Exception):
    """A request the server refuses, with the status and OpenAI's error fields."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The JSON body OpenAI's clients read: ``{"error": {"message", "type", "param", "code"}}``."""
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad(param: str, message: str) -> ApiError:
    return ApiError(400, message, param=param, code="invalid_value")


@dataclass(frozen=True)
class Sampling:
    """The sampling fields both endpoints take; None where the request left a field out."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False


@dataclass(frozen=True)
class ChatRequest:
    model: str | None
    messages: list[dict[str, str]]
    sampling: Sampling = field(default_factory=Sampling)


@dataclass(frozen=True)
class CompletionRequest:
    model: str | None
    prompt: str
    sampling: Sampling = field(default_factory=Sampling)


def parse_json(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise ApiError(400, "the request body is not valid JSON", code="invalid_json") from None
    if not isinstance(doc, dict):
        raise ApiError(400, "the request body must be a JSON object", code="invalid_json")
    return doc


def _number(doc: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise bad(name, f"'{name}' must be a number")
    if not low <= value <= high:
        raise bad(name, f"'{name}' must be between {low:g} and {high:g}")
    return float(value)


def _integer(doc: dict[str, Any], name: str, low: int, high: int) -> int | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(name, f"'{name}' must be an integer")
    if not low <= value <= high:
        raise bad(name, f"'{name}' must be between {low} and {high}")
    return value


def _sampling(doc: dict[str, Any]) -> Sampling:
    n = _integer(doc, "n", 1, 128)
    if n not in (None, 1):
        raise bad("n", "only n = 1 is supported")
    max_tokens = _integer(doc, "max_completion_tokens", 1, 1 << 30)
    if max_tokens is None:
        max_tokens = _integer(doc, "max_tokens", 1, 1 << 30)
    temperature = _number(doc, "temperature", 0.0, 2.0)
    top_p = _number(doc, "top_p", 0.0, 1.0)
    if top_p == 0.0:
        raise bad("top_p", "'top_p' must be above 0")
    seed = _integer(doc, "seed", -(1 << 63), (1 << 64) - 1)
    stop_value = doc.get("stop")
    if stop_value is None:
        stop: tuple[str, ...] = ()
    elif isinstance(stop_value, str):
        stop = (stop_value,)
    elif isinstance(stop_value, list) and all(isinstance(s, str) for s in stop_value):
        stop = tuple(stop_value)
    else:
        raise bad("stop", "'stop' must be a string or a list of strings")
    if len(stop) > MAX_STOPS:
        raise bad("stop", f"'stop' takes at most {MAX_STOPS} strings")
    if any(len(s) > MAX_STOP_CHARS for s in stop):
        raise bad("stop", f"a stop string may be at most {MAX_STOP_CHARS} characters")
    stream = doc.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise bad("stream", "'stream' must be true or false")
    options = doc.get("stream_options")
    include_usage = False
    if options is not None:
        if not isinstance(options, dict):
            raise bad("stream_options", "'stream_options' must be an object")
        include_usage = options.get("include_usage", False)
        if not isinstance(include_usage, bool):
            raise bad("stream_options.include_usage", "'include_usage' must be true or false")
    return Sampling(max_tokens, temperature, top_p, seed, tuple(s for s in stop if s), stream, include_usage)


def _model(doc: dict[str, Any]) -> str | None:
    model = doc.get("model")
    if model is not None and not isinstance(model, str):
        raise bad("model", "'model' must be a string")
    return model


def _content(value: Any, where: str) -> str:
    """A message's content: a string, or a list of text parts (OpenAI's content-part form)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if (
                not isinstance(part, dict)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise bad(where, f"'{where}' may hold only text parts ({{'type': 'text', 'text': ...}})")
            texts.append(part["text"])
        return "".join(texts)
    raise bad(where, f"'{where}' must be a string or a list of text parts")


def parse_chat(doc: dict[str, Any]) -> ChatRequest:
    """A ``POST /v1/chat/completions`` body."""
    messages = doc.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("messages", "'messages' must be a non-empty list")
    if len(messages) > MAX_MESSAGES:
        raise bad("messages", f"at most {MAX_MESSAGES} messages")
    out: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise bad(where, f"'{where}' must be an object with 'role' and 'content'")
        role = message.get("role")
        if role not in ROLES:
            raise bad(f"{where}.role", f"'{where}.role' must be one of {', '.join(sorted(ROLES))}")
        out.append({"role": ROLES[role], "content": _content(message.get("content"), f"{where}.content")})
    # A system prompt goes first, where the chat template expects it; later ones are read as the user's.
    for message in out[1:]:
        if message["role"] == "system":
            message["role"] = "user"
    if out[-1]["role"] == "assistant":
        raise bad("messages", "the last message must be the user's (continuing an answer is not supported)")
    return ChatRequest(_model(doc), out, _sampling(doc))


def parse_completion(doc: dict[str, Any]) -> CompletionRequest:
    """A ``POST /v1/completions`` body (``prompt``: a string or a list of one string)."""
    prompt = doc.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise bad("prompt", "'prompt' must be a string (or a list of one string)")
    if doc.get("echo"):
        raise bad("echo", "'echo' is not supported")
    if doc.get("suffix"):
        raise bad("suffix", "'suffix' is not supported")
    if doc.get("logprobs"):
        raise bad("logprobs", "'logprobs' is not supported")
    return CompletionRequest(_model(doc), prompt, _sampling(doc))
