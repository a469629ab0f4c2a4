"""The real model answers through the openai client, streamed, on a real uvicorn."""

from __future__ import annotations

import openai
import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.host import EngineHost
from qwen_desktop.server import LocalServer


@pytest.mark.real_model
def test_the_real_model_answers_through_the_openai_client(real_int4_dir):
    host = EngineHost(engine=ChatEngine(real_int4_dir, threads=2, context_limit=2048))
    server = LocalServer(host, port=0)
    server.start()
    try:
        with openai.OpenAI(
            base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=300
        ) as client:
            stream = client.chat.completions.create(
                model=real_int4_dir.name,
                messages=[{"role": "user", "content": "Write a Python function that reverses a string."}],
                temperature=0,
                seed=1,
                max_tokens=80,
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert "def " in text, text
        assert chunks[-1].usage.completion_tokens > 10
    finally:
        server.stop()
        host.close()
