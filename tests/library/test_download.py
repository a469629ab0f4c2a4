"""Downloads from a local stand-in for the hub (tests/hubserver.py): progress, cancel, resume, retries, checks."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import itertools
import select
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import huggingface_hub
import pytest

from qwen_desktop.library.download import (
    ChecksumError,
    ConnectionLostError,
    DiskSpaceError,
    DownloadCancelledError,
    HubAuthError,
    HubNotFoundError,
    HubOfflineError,
    HubServerError,
    RetryPolicy,
    _Speed,
    download_file,
    list_repo_files,
    offline_message,
    part_path,
    partial_bytes,
    resolve_file,
)
from tests.hubserver import HubServer

REPO = "Qwen/Tiny-GGUF"
FILE = "tiny-q8_0.gguf"
FAST = RetryPolicy(attempts=3, first_wait=0.01, max_wait=0.05)


@pytest.fixture(scope="module")
def gguf_bytes(tiny_gguf) -> bytes:
    return tiny_gguf.read_bytes()


@pytest.fixture
def hub(gguf_bytes):
    server = HubServer()
    server.add_repo(REPO, {FILE: gguf_bytes, "config.json": b'{"model_type": "qwen2"}'})
    with server:
        yield server
    huggingface_hub.close_session()  # no pooled connection to a closed server survives the test


def fetch(hub, tmp_path, **kw):
    kw.setdefault("endpoint", hub.endpoint)
    kw.setdefault("retry", FAST)
    return download_file(REPO, kw.pop("filename", FILE), tmp_path / "dl" / kw.pop("name", FILE), **kw)


def test_progress_arrives_and_adds_up_to_the_file_size(hub, tmp_path, gguf_bytes):
    calls = []
    result = fetch(hub, tmp_path, progress=calls.append)

    size = len(gguf_bytes)
    assert result.size == size and result.resumed_from == 0
    assert result.sha256 == hashlib.sha256(gguf_bytes).hexdigest()
    assert result.path.read_bytes() == gguf_bytes
    assert result.commit == hub.repos[REPO].commit
    assert len(calls) >= 3
    assert calls[0].done == 0 and calls[-1].done == size
    assert all(c.total == size for c in calls)
    steps = [b.done - a.done for a, b in itertools.pairwise(calls)]
    assert all(s > 0 for s in steps) and sum(steps) == size
    assert calls[-1].speed > 0 and calls[-1].eta == 0
    assert not part_path(result.path).exists()
    # The HEAD goes to the hub, which redirects to the CDN; the bytes come from there in one request.
    assert [(r.server, r.method) for r in hub.requests] == [("hub", "HEAD"), ("cdn", "GET")]
    assert hub.requests[1].range is None


def test_the_speed_is_smoothed_past_the_first_burst_and_follows_a_change():
    speed = _Speed()
    # 1 MB arrives in the first 20 ms (what the socket had buffered), then 100 kB/s in bursts of 30 kB every
    # 0.3 s: the figure shown neither keeps the first burst nor swings with each one.
    shown = [speed.add(0.0, 0), speed.add(0.02, 1_000_000)]
    t, done = 0.02, 1_000_000
    for _ in range(40):  # 12 s
        t += 0.3
        done += 30_000
        shown.append(speed.add(t, done))
    steady = shown[-20:]  # the last 6 s
    assert all(90_000 < s < 110_000 for s in steady), steady
    assert max(steady) - min(steady) < 10_000
    # then 50 kB/s: within 5 s the figure is near the new speed, and it went down without overshooting
    after = []
    for _ in range(25):
        t += 0.3
        done += 15_000
        after.append(speed.add(t, done))
    assert 45_000 < after[-1] < 60_000
    assert all(b <= a + 1 for a, b in itertools.pairwise(after))


def test_a_throttled_download_reports_a_steady_speed_and_time_left(hub, tmp_path, gguf_bytes):
    hub.rate = 200_000  # bytes/s
    calls = []
    fetch(hub, tmp_path, progress=calls.append)
    settled = [c for c in calls if c.done >= 300_000 and c.done < len(gguf_bytes)]
    assert settled
    assert all(150_000 < c.speed < 250_000 for c in settled), [round(c.speed) for c in settled]
    for c in settled:
        assert c.eta == pytest.approx((c.total - c.done) / c.speed)


def test_resolve_reads_the_lfs_metadata_and_the_listing_agrees(hub, gguf_bytes):
    remote = resolve_file(REPO, FILE, endpoint=hub.endpoint)
    assert remote.size == len(gguf_bytes)
    assert remote.sha256 == hashlib.sha256(gguf_bytes).hexdigest()
    assert remote.url.startswith(hub.cdn)
    commit, files = list_repo_files(REPO, endpoint=hub.endpoint)
    assert commit == remote.commit
    assert files[FILE].sha256 == remote.sha256 and files[FILE].size == remote.size
    assert files["config.json"].sha256 is None


def test_cancel_then_resume_continues_from_the_byte_where_it_stopped(hub, tmp_path, gguf_bytes):
    cancel = threading.Event()

    def stop_midway(p):
        if p.done >= 100_000:
            cancel.set()

    with pytest.raises(DownloadCancelledError, match="paused"):
        fetch(hub, tmp_path, progress=stop_midway, cancel=cancel)
    dest = tmp_path / "dl" / FILE
    kept = partial_bytes(dest)
    assert 100_000 <= kept < len(gguf_bytes)
    assert not dest.exists()
    assert part_path(dest).read_bytes() == gguf_bytes[:kept]

    calls = []
    result = fetch(hub, tmp_path, progress=calls.append)
    assert result.resumed_from == kept
    assert calls[0].done == kept and calls[-1].done == len(gguf_bytes)
    assert hub.file_requests()[-1].range == f"bytes={kept}-"
    assert result.path.read_bytes() == gguf_bytes


def test_cancel_is_honoured_at_once_even_on_a_stalled_connection(hub, tmp_path):
    hub.stall_after = 50_000  # the server sends 50 kB, then nothing (the read timeout is 10 s)
    cancel = threading.Event()
    stalled = threading.Event()
    set_at = []

    def on_progress(p):
        if p.done >= 50_000:
            stalled.set()

    def cancel_soon():
        stalled.wait(5)
        time.sleep(0.3)
        set_at.append(time.monotonic())
        cancel.set()

    timer = threading.Thread(target=cancel_soon)
    timer.start()
    try:
        with pytest.raises(DownloadCancelledError):
            fetch(hub, tmp_path, progress=on_progress, cancel=cancel)
        stopped = time.monotonic()
    finally:
        timer.join()
    # The read was blocked on a silent socket: only the cancel watch can have ended it this soon.
    assert stopped - set_at[0] < 0.2
    assert partial_bytes(tmp_path / "dl" / FILE) == 50_000


def test_a_dropped_connection_is_retried_and_completes(hub, tmp_path, gguf_bytes):
    hub.drop_after = 100_000  # once: close the connection after 100 kB
    result = fetch(hub, tmp_path)
    assert result.path.read_bytes() == gguf_bytes
    ranges = [r.range for r in hub.file_requests()]
    assert ranges == [None, "bytes=100000-"]


def test_server_errors_mid_download_are_retried(hub, tmp_path, gguf_bytes):
    hub.fail(503, times=2, where="cdn")
    result = fetch(hub, tmp_path)
    assert result.path.read_bytes() == gguf_bytes
    assert len(hub.file_requests()) == 3


def test_a_server_error_that_persists_gives_up_after_the_retries(hub, tmp_path):
    hub.fail(503, times=None, where="cdn")
    with pytest.raises(HubServerError, match="HTTP 503"):
        fetch(hub, tmp_path)
    assert len(hub.file_requests()) == FAST.attempts


def test_a_checksum_mismatch_is_rejected_and_nothing_is_kept(hub, tmp_path):
    hub.corrupt = True
    with pytest.raises(ChecksumError, match="checksum does not match"):
        fetch(hub, tmp_path)
    dest = tmp_path / "dl" / FILE
    assert not dest.exists() and not part_path(dest).exists()
    assert list((tmp_path / "dl").iterdir()) == []


def test_a_plain_git_file_is_verified_with_its_git_blob_id(hub, tmp_path):
    result = fetch(hub, tmp_path, filename="config.json", name="config.json")
    assert result.path.read_bytes() == b'{"model_type": "qwen2"}'
    hub.corrupt = True
    with pytest.raises(ChecksumError):
        fetch(hub, tmp_path, filename="config.json", name="again.json")


@pytest.mark.parametrize(
    ("setup", "filename", "error", "message"),
    [
        (lambda hub: None, "no-such-file.gguf", HubNotFoundError, "not found on the hub"),
        (lambda hub: hub.fail(404), FILE, HubNotFoundError, "not found on the hub"),
        (lambda hub: hub.fail(401), FILE, HubAuthError, "needs a login"),
        (lambda hub: hub.fail(403), FILE, HubAuthError, "needs a login"),
        (lambda hub: hub.add_repo(REPO, {FILE: b"x"}, gated=True), FILE, HubAuthError, "gated"),
        (lambda hub: hub.fail(500), FILE, HubServerError, "HTTP 500"),
    ],
    ids=["missing-file", "404", "401", "403", "gated", "500"],
)
def test_hub_errors_have_clear_one_line_messages(hub, tmp_path, setup, filename, error, message):
    setup(hub)
    with pytest.raises(error, match=message) as info:
        fetch(hub, tmp_path, filename=filename)
    assert "\n" not in str(info.value)
    heads = [r for r in hub.requests if r.method == "HEAD"]
    assert len(heads) == (FAST.attempts if error is HubServerError else 1)
    assert not hub.file_requests()


def test_an_unknown_repository_reads_as_not_found_or_login(hub, tmp_path):
    with pytest.raises(
        HubAuthError, match="needs a login: the repository is gated or private, or not on the hub"
    ):
        download_file("Qwen/No-Such-Repo", FILE, tmp_path / FILE, endpoint=hub.endpoint, retry=FAST)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_no_network_gives_the_offline_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    started = time.monotonic()
    with pytest.raises(HubOfflineError) as info:
        download_file(REPO, FILE, tmp_path / FILE, retry=FAST)
    assert (
        str(info.value)
        == offline_message()
        == ("No connection to 127.0.0.1 — check the network, or use a model file you already have.")
    )
    assert time.monotonic() - started < 2  # no retries on a refused connection: the answer comes at once
    assert not list(tmp_path.iterdir())


def test_offline_mode_gives_the_offline_message_without_any_request(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubOfflineError, match=r"^No connection to 127\.0\.0\.1 — check the network"):
        fetch(hub, tmp_path)
    with pytest.raises(HubOfflineError):
        list_repo_files(REPO, endpoint=hub.endpoint)
    assert hub.requests == []


def test_hf_endpoint_is_read_at_call_time(hub, tmp_path, monkeypatch, gguf_bytes):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    result = download_file(REPO, FILE, tmp_path / FILE, retry=FAST)
    assert result.path.read_bytes() == gguf_bytes


def test_the_disk_space_check_comes_before_any_byte(hub, tmp_path):
    with pytest.raises(DiskSpaceError, match="not enough disk space"):
        fetch(hub, tmp_path, reserve_bytes=10**18)
    assert not hub.file_requests()
    assert not part_path(tmp_path / "dl" / FILE).exists()


def test_a_partial_file_of_another_version_is_not_resumed(hub, tmp_path, gguf_bytes):
    dest = tmp_path / "dl" / FILE
    dest.parent.mkdir()
    part_path(dest).write_bytes(b"old bytes" * 1000)
    dest.with_name(dest.name + ".part.json").write_text('{"checksum": "sha256:0000"}')
    result = fetch(hub, tmp_path)
    assert result.resumed_from == 0 and result.path.read_bytes() == gguf_bytes
    assert hub.file_requests()[0].range is None


def test_a_file_already_in_place_is_not_downloaded_again(hub, tmp_path):
    first = fetch(hub, tmp_path)
    second = fetch(hub, tmp_path)
    assert second.sha256 == first.sha256 and second.resumed_from == second.size
    assert len(hub.file_requests()) == 1


def test_giving_up_on_a_dropping_connection_keeps_the_part_for_the_next_call(hub, tmp_path, gguf_bytes):
    no_retries = RetryPolicy(attempts=1, first_wait=0.01)
    hub.drop_after = 20_000
    with pytest.raises(ConnectionLostError, match="resumes from there"):
        fetch(hub, tmp_path, retry=no_retries)
    assert partial_bytes(tmp_path / "dl" / FILE) == 20_000
    result = fetch(hub, tmp_path, retry=no_retries)
    assert result.resumed_from == 20_000 and result.path.read_bytes() == gguf_bytes
    assert hub.file_requests()[-1].range == "bytes=20000-"


def self_signed(tmp_path):
    """A certificate and key for 127.0.0.1 (openssl req), or a skip when there is no openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_certificates_are_verified(tmp_path, gguf_bytes):
    cert, key = self_signed(tmp_path)
    server = HubServer(tls=(cert, key))
    server.add_repo(REPO, {FILE: gguf_bytes})
    with server, pytest.raises(HubOfflineError, match="TLS certificate could not be verified"):
        download_file(REPO, FILE, tmp_path / FILE, endpoint=server.endpoint, retry=FAST)
    huggingface_hub.close_session()
    assert server.requests == []  # a self-signed hub is refused before any request is sent


class _ForwardProxy(BaseHTTPRequestHandler):
    """A plain-HTTP forward proxy: requests arrive with an absolute URL and are relayed as they are."""

    protocol_version = "HTTP/1.0"  # one request per connection: the relay reads whole bodies
    seen: list[str]

    def log_message(self, format, *args):
        pass

    def do_HEAD(self):
        self._relay()

    def do_GET(self):
        self._relay()

    def do_CONNECT(self):
        """An HTTPS request: a tunnel to host:port, bytes relayed both ways until one side closes."""
        self.seen.append(f"CONNECT {self.path}")
        host, port = self.path.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)), timeout=10)
        self.send_response(200, "Connection established")
        self.end_headers()
        sockets = [self.connection, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.connection else self.connection).sendall(data)
        finally:
            upstream.close()

    def _relay(self):
        self.seen.append(f"{self.command} {self.path}")
        url = urlsplit(self.path)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            headers = {
                k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")
            }
            conn.request(self.command, url.path + (f"?{url.query}" if url.query else ""), headers=headers)
            response = conn.getresponse()
            body = response.read()
            self.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in ("connection", "transfer-encoding"):
                    self.send_header(key, value)
            self.end_headers()
            if self.command == "GET":
                self.wfile.write(body)
        finally:
            conn.close()


@contextlib.contextmanager
def forward_proxy():
    """A forward proxy on 127.0.0.1 (plain requests and CONNECT tunnels); yields (its URL, what it saw)."""
    handler = type("Proxy", (_ForwardProxy,), {"seen": []})
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    proxy.daemon_threads = True
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}", handler.seen
    finally:
        huggingface_hub.close_session()
        proxy.shutdown()
        proxy.server_close()
        thread.join()


def proxy_environment(monkeypatch, **variables):
    """Set the proxy variables (upper case, and lower case cleared), then a new shared client: it reads
    them when it is created, as a new app process does."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    huggingface_hub.close_session()


def test_requests_go_through_the_proxy_named_in_the_environment(hub, tmp_path, monkeypatch, gguf_bytes):
    with forward_proxy() as (url, seen):
        proxy_environment(monkeypatch, HTTP_PROXY=url)
        result = fetch(hub, tmp_path)
    handler = type("Seen", (), {"seen": seen})
    assert result.path.read_bytes() == gguf_bytes
    assert [s.split(" ")[0] for s in handler.seen] == ["HEAD", "GET"]
    assert handler.seen[0].startswith(f"HEAD {hub.endpoint}/{REPO}/resolve/main/")
    assert handler.seen[1].startswith(f"GET {hub.cdn}/lfs/")


def test_an_https_hub_is_reached_through_https_proxy_with_a_connect_tunnel(tmp_path, monkeypatch, gguf_bytes):
    cert, key = self_signed(tmp_path)
    server = HubServer(tls=(cert, key))  # the hub over HTTPS, its "CDN" over plain HTTP
    server.add_repo(REPO, {FILE: gguf_bytes})
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust this hub's certificate, as a company CA would be
    with server, forward_proxy() as (url, seen):
        proxy_environment(monkeypatch, HTTPS_PROXY=url, HTTP_PROXY=url)
        result = download_file(REPO, FILE, tmp_path / "dl" / FILE, endpoint=server.endpoint, retry=FAST)
    assert result.path.read_bytes() == gguf_bytes
    hub_port = server.endpoint.rsplit(":", 1)[1]
    assert seen[0] == f"CONNECT 127.0.0.1:{hub_port}"  # the HEAD went through the tunnel, encrypted
    assert [s.split(" ")[0] for s in seen] == ["CONNECT", "GET"]
    assert seen[1].startswith(f"GET {server.cdn}/lfs/")
    assert [(r.server, r.method) for r in server.requests] == [("hub", "HEAD"), ("cdn", "GET")]


def test_no_proxy_names_the_hosts_reached_directly(hub, tmp_path, monkeypatch, gguf_bytes):
    dead = f"http://127.0.0.1:{_closed_port()}"  # a proxy that is not there: any use of it would fail
    proxy_environment(monkeypatch, HTTPS_PROXY=dead, HTTP_PROXY=dead, NO_PROXY="127.0.0.1")
    try:
        result = fetch(hub, tmp_path)
    finally:
        huggingface_hub.close_session()
    assert result.path.read_bytes() == gguf_bytes


def test_a_proxy_that_is_not_there_is_one_sentence_too(hub, tmp_path, monkeypatch):
    dead = f"http://127.0.0.1:{_closed_port()}"
    proxy_environment(monkeypatch, HTTPS_PROXY=dead, HTTP_PROXY=dead)
    started = time.monotonic()
    try:
        with pytest.raises(HubOfflineError) as info:
            fetch(hub, tmp_path)
    finally:
        huggingface_hub.close_session()
    assert str(info.value) == (
        f"No connection to the proxy {dead.removeprefix('http://')} — check the proxy settings (HTTPS_PROXY, "
        "HTTP_PROXY), or use a model file you already have."
    )
    assert time.monotonic() - started < 2
