"""A real uvicorn serving the tiny model on a free port, and the official openai client pointed at it."""

from __future__ import annotations

import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.host import EngineHost
from qwen_desktop.server import LocalServer, ServerConfig


@pytest.fixture(scope="session")
def tiny_engine(tiny_fp32_dir):
    return ChatEngine(tiny_fp32_dir, threads=1, context_limit=512)


@pytest.fixture(scope="session")
def host(tiny_engine):
    h = EngineHost(max_queue=32, engine=tiny_engine)
    yield h
    h.close()


def serve(host, **config):
    server = LocalServer(host, "127.0.0.1", 0, ServerConfig(**config))
    server.start()
    return server


@pytest.fixture(scope="session")
def server(host):
    s = serve(host)
    yield s
    s.stop()


@pytest.fixture()
def client(server):
    import openai

    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120) as c:
        yield c


@pytest.fixture()
def model_id(host):
    return host.model.id
