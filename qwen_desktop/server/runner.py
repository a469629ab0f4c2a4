"""``LocalServer``: the API app on uvicorn, in a background thread, on a socket bound up front.

Binding the socket here (not inside uvicorn) turns a busy port or a bad address into an ``OSError`` at
``start()``, with nothing left running.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
import threading

import uvicorn

from qwen_desktop.engine.host import EngineHost
from qwen_desktop.server.app import ServerConfig, create_app

log = logging.getLogger("qwen_desktop.server")

DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost": addresses only this machine can reach."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


class LocalServer:
    """Serves ``host`` over HTTP until ``stop()``.

    Args:
        host: the engine host whose model the API serves.
        address: where to listen; anything but a loopback address lets other machines in (the caller
            warns about it) and turns off the localhost-only ``Host`` check.
        port: 0 picks a free port (see ``port`` after ``start``).
        config: API key, CORS origins, limits.
    """

    def __init__(
        self,
        host: EngineHost,
        address: str = DEFAULT_ADDRESS,
        port: int = DEFAULT_PORT,
        config: ServerConfig | None = None,
    ) -> None:
        cfg = config or ServerConfig()
        if not is_loopback(address) and cfg.loopback_only:
            cfg = dataclasses.replace(cfg, loopback_only=False)
        self.host = host
        self.address = address
        self.port = port
        self.config = cfg
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{shown}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 15.0) -> str:
        """Bind, start serving in a thread and return the URL. Raises ``OSError`` (port in use, bad
        address) or ``RuntimeError`` (uvicorn did not come up within ``timeout``)."""
        if self.running:
            return self.url
        family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.address.strip("[]"), self.port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            create_app(self.host, self.config),
            log_level="warning",
            access_log=False,  # the app logs one line per request itself
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="api-server", daemon=True
        )
        self._server, self._thread, self._socket = server, thread, sock
        thread.start()
        waited = 0.0
        while not server.started and thread.is_alive() and waited < timeout:
            thread.join(0.05)
            waited += 0.05
        if not server.started:
            self.stop()
            raise RuntimeError(f"the server did not start on {self.url}")
        log.info("serving the API on %s", self.url)
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving: open streams are closed (their jobs cancelled) and the port is released."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout)
        self._socket.close()
        self._server = self._thread = None
