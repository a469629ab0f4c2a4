"""The local OpenAI-compatible HTTP API (FastAPI on uvicorn) and its chat page, over one ``EngineHost``.

Qt-free: the CLI (``qwen-desktop serve``) and the window's Settings → Local server both run it.
See docs/server.md.
"""

from __future__ import annotations

from qwen_desktop.server.app import ServerConfig, create_app
from qwen_desktop.server.runner import DEFAULT_ADDRESS, DEFAULT_PORT, LocalServer, is_loopback

__all__ = ["DEFAULT_ADDRESS", "DEFAULT_PORT", "LocalServer", "ServerConfig", "create_app", "is_loopback"]
