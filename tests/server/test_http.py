"""The API at the HTTP level (httpx, what the openai client runs on): bad bodies, guards, the page."""

from __future__ import annotations

import json

import httpx2 as httpx  # the HTTP client the openai package runs on
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qwen_desktop.server.requests import ApiError, parse_chat, parse_completion


def post(server, path, content, headers=None):
    return httpx.post(server.url + path, content=content, headers=headers or {}, timeout=60)


def assert_openai_error(r, status):
    assert r.status_code == status
    doc = r.json()
    assert set(doc) == {"error"}
    assert doc["error"]["message"] and "Traceback" not in r.text
    return doc["error"]


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b'"text"', b"", json.dumps({"messages": "hello"}).encode(), b"\xff\xfe"],
)
def test_a_malformed_body_is_400(server, body):
    assert_openai_error(post(server, "/v1/chat/completions", body), 400)


def test_a_body_over_the_limit_is_413(server):
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (5 << 20)}]}).encode()
    assert_openai_error(post(server, "/v1/chat/completions", big), 413)


def test_a_foreign_host_header_is_refused(server):
    """A web page that points its own domain at 127.0.0.1 (DNS rebinding) cannot use the API."""
    r = httpx.get(server.url + "/v1/models", headers={"Host": "evil.example:8765"})
    assert_openai_error(r, 403)
    assert httpx.get(server.url + "/v1/models", headers={"Host": "localhost"}).status_code == 200


def test_no_cors_headers_unless_origins_are_configured(server):
    r = httpx.options(
        server.url + "/v1/chat/completions",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in r.headers


def test_unknown_paths_and_methods_get_openai_errors(server):
    assert_openai_error(httpx.get(server.url + "/v1/nothing"), 404)
    assert_openai_error(httpx.get(server.url + "/v1/chat/completions"), 405)
    assert_openai_error(httpx.get(server.url + "/static/../app.py"), 404)


def test_health(server, model_id):
    doc = httpx.get(server.url + "/health").json()
    assert doc["status"] == "ok" and doc["model"] == model_id


def test_the_page_forbids_inline_and_foreign_scripts(server):
    r = httpx.get(server.url + "/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "<script>" not in r.text  # only the packaged script file
    assert httpx.get(server.url + "/static/chat.js").status_code == 200


def test_a_stream_ends_with_done(server, model_id):
    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "max_tokens": 5,
    }
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=60) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    docs = [json.loads(line[6:]) for line in lines[:-1]]
    assert all(d["object"] == "chat.completion.chunk" for d in docs)
    assert docs[-1]["choices"][0]["finish_reason"] in ("stop", "length")


# -- the request readers take any JSON: a request or a 400 naming the problem, nothing else -------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
FIELDS = [
    "messages",
    "model",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "seed",
    "stop",
    "stream",
    "stream_options",
    "n",
    "prompt",
    "echo",
    "role",
    "content",
    "type",
    "text",
    "include_usage",
]
requests_like = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=8) | json_values.map(
    lambda v: {"messages": v}
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(doc=requests_like)
@example(doc={"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})
@example(doc={"messages": [{"role": "user", "content": "x"}], "temperature": float("nan")})
@example(doc={"prompt": [1], "stop": [None]})
def test_any_json_body_reads_or_is_refused_with_400(doc):
    for parse in (parse_chat, parse_completion):
        try:
            req = parse(doc)
        except ApiError as exc:
            assert exc.status == 400 and exc.message
        else:
            assert req.sampling.max_tokens is None or req.sampling.max_tokens >= 1
