"""A stand-in for the Hugging Face hub on 127.0.0.1, speaking the requests huggingface_hub makes.

- ``HEAD/GET /{repo}/resolve/{revision}/{path}``: for an LFS file a 302 to a second "CDN" port, with
  ``X-Repo-Commit``, ``X-Linked-Etag`` (the SHA-256) and ``X-Linked-Size``, as the real hub answers; for a
  plain git file a 200 with the git blob SHA-1 as ``ETag``.
- ``GET /api/models/{repo}/revision/{revision}?blobs=true``: the file listing with sizes and LFS SHA-256s.
- ``GET /lfs/{sha256}`` on the CDN port: the bytes, with ``Range`` support.

Every request is recorded (``server.requests``) so tests can check the ``Range`` header. Faults on demand:
``fail(status)``, ``drop_after`` (close the connection after N bytes, once), ``corrupt`` (serve other bytes
than the checksum says), ``stall_after`` (stop sending after N bytes until closed), ``rate`` (bytes/s).

Run it by hand to try ``qwen-desktop download`` against it (docs/models.md, "The local test server")::

    python3 -m tests.hubserver --port 8765 --rate 50000    # --rate: bytes/s, slow enough to interrupt
    export HF_ENDPOINT=http://127.0.0.1:8765 QWEN_DESKTOP_HOME=/tmp/qwen-demo   # in another terminal
    qwen-desktop download qwen2.5-0.5b-instruct    # Ctrl-C half-way: "paused at ..."; run again to resume
    qwen-desktop models                            # the table, the default marked with *
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".gguf", ".onnx", ".onnx_data", ".safetensors", ".bin")
SEND_BLOCK = 4096
CONNECTION_ERRORS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout)


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    commit: str
    files: dict[str, bytes]
    gated: bool = False

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)


@dataclass
class Request:
    server: str  # "hub" or "cdn"
    method: str
    path: str
    headers: dict[str, str]

    @property
    def range(self) -> str | None:
        return self.headers.get("range")


@dataclass
class Fault:
    status: int
    times: int | None  # None: every time
    where: str


@dataclass
class HubServer:
    """The fake hub: a hub port (resolve + API) and a CDN port (LFS bytes). Use as a context manager."""

    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    drop_after: int | None = None  # close the connection after this many body bytes, once
    stall_after: int | None = None  # send this many body bytes, then nothing until the server closes
    corrupt: bool = False
    rate: float | None = None  # bytes per second for file bodies
    tls: tuple[Path, Path] | None = None  # (certificate, key): serve the hub port over HTTPS

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.closing = threading.Event()
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    # ----------------------------------------------------------------- set-up

    def add_repo(self, repo_id: str, files: dict[str, bytes], *, gated: bool = False) -> Repo:
        commit = hashlib.sha1(repo_id.encode() + b"".join(sorted(files.values()))).hexdigest()
        self.repos[repo_id] = Repo(commit, dict(files), gated)
        return self.repos[repo_id]

    def fail(self, status: int, times: int | None = None, where: str = "hub") -> None:
        """Answer ``status`` to the next ``times`` file requests (None: all) on ``where`` ("hub"/"cdn")."""
        self.faults.append(Fault(status, times, where))

    def start(self, port: int = 0) -> HubServer:
        for name, port_wanted in (("hub", port), ("cdn", 0)):
            server = _Server(("127.0.0.1", port_wanted), _handler_for(self, name))
            if self.tls and name == "hub":
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(*self.tls)
                server.socket = context.wrap_socket(server.socket, server_side=True)
            self._servers.append(server)
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        self.closing.set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    # ----------------------------------------------------------------- queries for tests

    def file_requests(self, method: str = "GET") -> list[Request]:
        """Requests that fetched file bytes (not HEADs, not API calls)."""
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method == method and (r.server == "cdn" or "/resolve/" in r.path)
            ]

    def _take_fault(self, where: str) -> int | None:
        with self.lock:
            for fault in self.faults:
                if fault.where == where and (fault.times is None or fault.times > 0):
                    if fault.times is not None:
                        fault.times -= 1
                    return fault.status
        return None

    def _lfs_blob(self, sha256: str) -> bytes | None:
        for repo in self.repos.values():
            for data in repo.files.values():
                if hashlib.sha256(data).hexdigest() == sha256:
                    return data
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-file is what the tests are about, not an error


def _handler_for(hub: HubServer, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        pass

    Handler.hub = hub
    Handler.name = name
    return Handler


RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: HubServer
    name: str

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        path = unquote(urlsplit(self.path).path)
        with self.hub.lock:
            self.hub.requests.append(
                Request(self.name, self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
            )
        try:
            if self.name == "cdn":
                self._cdn(path)
            elif m := RESOLVE.match(path):
                self._resolve(m["repo"], m["rev"], m["path"])
            elif m := API.match(path):
                self._api(m["repo"], m["rev"] or "main")
            else:
                self._error(404, "RepoNotFound")
        except CONNECTION_ERRORS:
            self.close_connection = True

    # ----------------------------------------------------------------- routes

    def _repo(self, repo_id: str, rev: str) -> Repo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(401, "RepoNotFound")  # what the hub answers an anonymous client
            return None
        if repo.gated:
            self._error(401, "GatedRepo")
            return None
        if rev not in ("main", repo.commit):
            self._error(404, "RevisionNotFound", repo.commit)
            return None
        return repo

    def _resolve(self, repo_id: str, rev: str, path: str) -> None:
        status = self.hub._take_fault("hub")
        if status is not None:
            self._error(status, None)
            return
        repo = self._repo(repo_id, rev)
        if repo is None:
            return
        data = repo.files.get(path)
        if data is None:
            self._error(404, "EntryNotFound", repo.commit)
            return
        if repo.is_lfs(path):
            sha = hashlib.sha256(data).hexdigest()
            self.send_response(302)
            self.send_header("Location", f"{self.hub.cdn}/lfs/{sha}?expires={int(time.time()) + 3600}")
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("ETag", f'"{git_blob_sha1(data)}"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send_file(data, {"X-Repo-Commit": repo.commit, "ETag": f'"{git_blob_sha1(data)}"'})

    def _api(self, repo_id: str, rev: str) -> None:
        repo = self._repo(repo_id, rev)
        if repo is None:
            return
        siblings = []
        for path, data in sorted(repo.files.items()):
            entry: dict[str, Any] = {"rfilename": path, "size": len(data), "blobId": git_blob_sha1(data)}
            if repo.is_lfs(path):
                entry["lfs"] = {
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "pointerSize": 134,
                }
            siblings.append(entry)
        body = json.dumps(
            {"id": repo_id, "modelId": repo_id, "sha": repo.commit, "siblings": siblings}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def _cdn(self, path: str) -> None:
        status = self.hub._take_fault("cdn")
        if status is not None:
            self._error(status, None)
            return
        data = self.hub._lfs_blob(path.removeprefix("/lfs/"))
        if data is None:
            self._error(404, None)
            return
        self._send_file(data, {"ETag": f'"{hashlib.sha256(data).hexdigest()}"'})

    # ----------------------------------------------------------------- bytes

    def _send_file(self, data: bytes, headers: dict[str, str]) -> None:
        hub = self.hub
        if hub.corrupt:
            data = bytes(b ^ 0x5A for b in data[:64]) + data[64:]
        start = 0
        wanted = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-", wanted or "")
        if m and int(m[1]) >= len(data):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if m:
            start = int(m[1])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        if self.command == "HEAD":
            return
        body = memoryview(data)[start:]
        with hub.lock:
            drop, hub.drop_after = hub.drop_after, None
        limit = hub.stall_after if hub.stall_after is not None else drop
        sent = 0
        while sent < len(body):
            if limit is not None and sent >= limit:
                if hub.stall_after is not None:
                    hub.closing.wait(30)  # a stalled connection: nothing more until the test ends
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            step = len(body) - sent
            if hub.rate:
                step = min(step, SEND_BLOCK)
            if limit is not None:
                step = min(step, limit - sent)
            self.wfile.write(body[sent : sent + step])
            sent += step
            if hub.rate:
                time.sleep(step / hub.rate)

    def _error(self, status: int, code: str | None, commit: str | None = None) -> None:
        body = json.dumps({"error": code or f"HTTP {status}"}).encode()
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)


def serve_catalog(server: HubServer, source: Path) -> None:
    """Serve ``source`` (a tiny GGUF) under every GGUF entry of the packaged catalogue, at its real name."""
    from qwen_desktop.library.catalog import load_catalog

    data = source.read_bytes()
    for entry in load_catalog():
        if entry.kind == "gguf":
            server.add_repo(entry.repo, {entry.files[0]: data})


def main() -> None:
    """Serve the tiny GGUF as every catalogue model until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--rate", type=float, default=None, help="throttle file bodies to this many bytes/s")
    args = parser.parse_args()
    from qwen_desktop.convert.tiny import make_tiny_source

    with tempfile.TemporaryDirectory() as tmp:
        gguf = make_tiny_source(Path(tmp) / "tiny.gguf")
        server = HubServer(rate=args.rate)
        serve_catalog(server, gguf)
        server.start(args.port)
        try:
            print(f"fake hub on {server.endpoint} (CDN {server.cdn}); serving:", flush=True)
            for repo_id, repo in server.repos.items():
                for path in repo.files:
                    print(f"  {repo_id}/{path}", flush=True)
            print(f"HF_ENDPOINT={server.endpoint} qwen-desktop download qwen2.5-0.5b-instruct", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
        finally:
            server.close()


if __name__ == "__main__":
    main()
