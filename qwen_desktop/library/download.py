"""Download files from the Hugging Face hub so that they arrive whole: progress, cancel, resume, retry, verify.

The requests are the ones ``huggingface_hub`` makes (and go through its shared HTTP session, so ``HF_ENDPOINT``,
``HF_HUB_OFFLINE``, proxy variables, the stored login token and TLS verification all apply): a HEAD on
``/{repo}/resolve/{revision}/{file}`` gives the commit, the size and the LFS SHA-256 and where the bytes are
(often a redirect to a CDN); a GET with a ``Range`` header fetches the bytes from where a previous attempt
stopped. ``hf_hub_download`` itself is not used because it cannot be cancelled, reports progress only to
tqdm, and throws its partial file away when it fails.

While a file downloads it is ``NAME.part``, beside it ``NAME.part.json`` records which remote file (commit,
size, checksum) the bytes belong to, so a later call resumes only the same file. The file gets its real name
only once its size and checksum match what the hub announced.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
from huggingface_hub import HfApi, constants, get_hf_file_metadata, get_session, hf_hub_url
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

# Exported by huggingface_hub.utils through a lazy __getattr__, which mypy cannot see.
from huggingface_hub.utils import build_hf_headers, hf_raise_for_status  # type: ignore[attr-defined]

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.units import human_bytes

OFFLINE_MESSAGE = "No connection to {host} — check the network, or use a model file you already have."
PART_SUFFIX = ".part"
PART_META_SUFFIX = ".part.json"
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
SPEED_INTERVAL = 0.5  # seconds: the speed is measured over intervals at least this long
SPEED_SMOOTHING = (
    2.0  # seconds: time constant of the running average over those (steady, yet follows a change)
)


class DownloadError(ModelError):
    """A download failed; the message says why in one line."""


class HubNotFoundError(DownloadError):
    """The repository, revision or file does not exist on the hub (HTTP 404)."""


class HubAuthError(DownloadError):
    """The repository needs a login: it is gated or private (HTTP 401/403)."""


class HubServerError(DownloadError):
    """The hub kept answering with a server error (5xx) or "too many requests" after every retry."""


class HubOfflineError(DownloadError):
    """The hub cannot be reached at all (no network, DNS failure, offline mode)."""


class ConnectionLostError(DownloadError):
    """The connection kept dropping mid-file after every retry; the partial file is kept for a resume."""


class ChecksumError(DownloadError):
    """The downloaded bytes do not match the hub's checksum; the file was deleted."""


class DiskSpaceError(DownloadError):
    """Not enough free disk space for the download (and the build after it)."""


class DownloadCancelledError(DownloadError):
    """The download was cancelled; the partial file is kept and the next call resumes it."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often to retry a dropped connection or a 5xx answer, and how long to wait in between.

    ``attempts`` counts failures in a row: any attempt that receives bytes resets the count, so a long download
    over a flaky line keeps going as long as it makes progress. The wait doubles from ``first_wait`` up to
    ``max_wait``.
    """

    attempts: int = 6
    first_wait: float = 1.0
    max_wait: float = 30.0

    def wait(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failures in a row."""
        return min(self.max_wait, self.first_wait * 2.0 ** max(0, failures - 1))


@dataclass(frozen=True)
class RemoteFile:
    """One file of one commit on the hub, as the hub describes it before the download."""

    repo_id: str
    filename: str
    revision: str
    commit: str
    size: int
    sha256: str | None  # LFS files: the SHA-256 of the content (X-Linked-Etag)
    git_oid: str | None  # plain git files: the git blob SHA-1 (ETag)
    url: str  # where the bytes are (the resolve URL, or the CDN it redirects to)

    @property
    def checksum(self) -> str:
        """The checksum the bytes are verified against, as ``sha256:…`` or ``git-sha1:…``."""
        return f"sha256:{self.sha256}" if self.sha256 else f"git-sha1:{self.git_oid}"


@dataclass(frozen=True)
class DownloadProgress:
    """Where a download is: sent to the progress callback after every chunk."""

    done: int  # bytes on disk, including those of an earlier attempt that this one resumed
    total: int
    speed: float  # bytes per second over the last few seconds
    eta: float | None  # seconds left at that speed; None until the speed is known


@dataclass(frozen=True)
class DownloadResult:
    """A verified file in its final place."""

    path: Path
    size: int
    sha256: str
    commit: str
    resumed_from: int  # bytes that were already on disk when this call started
    seconds: float


ProgressCallback = Callable[[DownloadProgress], None]


def hub_endpoint(endpoint: str | None = None) -> str:
    """The hub's base URL: ``endpoint``, else ``HF_ENDPOINT`` as it is now, else huggingface_hub's default."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def offline_message(endpoint: str | None = None) -> str:
    """The one sentence for a hub that cannot be reached, naming its host (``huggingface.co``, or the mirror
    ``HF_ENDPOINT`` names)."""
    host = urlsplit(hub_endpoint(endpoint)).hostname or hub_endpoint(endpoint)
    return OFFLINE_MESSAGE.format(host=host)


def is_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` (read now, not at import) or huggingface_hub says to stay offline."""
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    return flag in {"1", "ON", "YES", "TRUE"} or constants.is_offline_mode()


def part_path(dest: Path) -> Path:
    """The partial file that a download to ``dest`` writes, and resumes from."""
    return dest.with_name(dest.name + PART_SUFFIX)


def partial_bytes(dest: Path) -> int:
    """How many bytes of a download to ``dest`` are already on disk (0 when there is nothing to resume)."""
    part = part_path(Path(dest))
    return part.stat().st_size if part.is_file() else 0


def _what(repo_id: str, filename: str | None, revision: str) -> str:
    name = f"{repo_id}/{filename}" if filename else repo_id
    return name if revision == "main" else f"{name} (revision {revision})"


def _status_error(status: int, what: str, attempts: int = 1) -> DownloadError:
    if status == 404:
        return HubNotFoundError(f"{what} was not found on the hub; check the name and the revision")
    if status in (401, 403):
        return HubAuthError(
            f"{what} needs a login: the repository is gated or private, or not on the hub "
            f"(HTTP {status}; accept its terms on huggingface.co and log in with `hf auth login`)"
        )
    if status in RETRY_STATUS:
        reason = "too many requests" if status == 429 else "server error"
        return HubServerError(
            f"the Hugging Face hub answered HTTP {status} ({reason}) for {what}, {attempts} times in a row; "
            "try again later"
        )
    return DownloadError(f"the Hugging Face hub answered HTTP {status} for {what}")


def _is_connect_failure(exc: BaseException) -> bool:
    """No connection could be made at all: no network, DNS failure, nothing listening, or a firewall."""
    return isinstance(exc, (httpx2.ConnectError, httpx2.ConnectTimeout, OfflineModeIsEnabled))


def _unreachable(exc: BaseException, endpoint: str | None) -> HubOfflineError:
    """The error for a connection that could not be made; a failed TLS check is not "offline"."""
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return HubOfflineError(
            "the Hugging Face hub's TLS certificate could not be verified (an HTTPS-inspecting proxy? add its "
            "certificate to the system's trusted certificates); verification stays on"
        )
    proxy = _proxy_for(hub_endpoint(endpoint))
    if proxy is not None:
        where = urlsplit(proxy).netloc or proxy
        return HubOfflineError(
            f"No connection to the proxy {where} — check the proxy settings (HTTPS_PROXY, HTTP_PROXY), or use "
            "a model file you already have."
        )
    return HubOfflineError(offline_message(endpoint))


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY``, less the
    hosts in ``NO_PROXY``), as huggingface_hub's HTTP client picks it; None for a direct connection."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    # proxy_bypass_environment is public in the standard library but missing from typeshed
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxy or bypass(parts.hostname or "", proxies):
        return None
    return proxy


def _is_transient(exc: BaseException) -> bool:
    """Worth another try: a dropped or timed-out connection, or a 5xx/429 answer."""
    if isinstance(exc, HfHubHTTPError):
        return exc.response is not None and exc.response.status_code in RETRY_STATUS
    if isinstance(exc, httpx2.ProxyError):
        return False
    return isinstance(exc, (httpx2.TransportError, _RetryableError))


class _RetryableError(Exception):
    """A GET that ended without the whole file: a 5xx/429 answer, or a connection closed early."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _sleep(seconds: float, cancel: threading.Event | None) -> None:
    if cancel is None:
        time.sleep(seconds)
    elif cancel.wait(seconds):
        raise DownloadCancelledError("download cancelled")


def _call_hub(
    fn: Callable[[], Any], what: str, retry: RetryPolicy, cancel: threading.Event | None, endpoint: str
) -> Any:
    """Run one metadata request, retrying 5xx/timeouts with backoff and turning failures into one-liners."""
    failures = 0
    while True:
        if cancel is not None and cancel.is_set():
            raise DownloadCancelledError("download cancelled")
        try:
            return fn()
        except httpx2.ProxyError as exc:
            raise HubOfflineError(
                f"the proxy refused the connection to the Hugging Face hub ({exc})"
            ) from None
        except Exception as exc:
            if _is_connect_failure(exc):
                # Retrying a refused connection only delays the message: the person can retry in one click.
                raise _unreachable(exc, endpoint) from None
            if not _is_transient(exc):
                if isinstance(exc, HfHubHTTPError) and exc.response is not None:
                    raise _status_error(exc.response.status_code, what) from None
                raise
            failures += 1
            if failures >= retry.attempts:
                if isinstance(exc, HfHubHTTPError) and exc.response is not None:
                    raise _status_error(exc.response.status_code, what, failures) from None
                raise ConnectionLostError(
                    f"the connection to the Hugging Face hub keeps failing ({type(exc).__name__}) for {what}; "
                    "try again later"
                ) from None
            _sleep(retry.wait(failures), cancel)


def resolve_file(
    repo_id: str,
    filename: str,
    revision: str = "main",
    *,
    endpoint: str | None = None,
    token: str | bool | None = None,
    retry: RetryPolicy | None = None,
    cancel: threading.Event | None = None,
) -> RemoteFile:
    """Ask the hub (one HEAD request, plus retries) for a file's commit, size, checksum and location.

    Raises:
        DownloadError: one of its subclasses, with a one-line message.
    """
    if is_offline():
        raise HubOfflineError(offline_message(endpoint))
    base = hub_endpoint(endpoint)
    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=base)
    what = _what(repo_id, filename, revision)

    def head() -> Any:
        return get_hf_file_metadata(url, token=token, endpoint=base)

    meta = _call_hub(head, what, retry or RetryPolicy(), cancel, base)
    if meta.commit_hash is None:
        raise DownloadError(
            f"{base} did not answer like the Hugging Face hub (no X-Repo-Commit header); check HF_ENDPOINT and "
            "proxy settings"
        )
    if meta.size is None:
        raise DownloadError(f"the hub did not say how large {what} is")
    etag = (meta.etag or "").lower()
    sha256 = etag if len(etag) == 64 else None
    git_oid = etag if len(etag) == 40 else None
    if sha256 is None and git_oid is None:
        raise DownloadError(f"the hub gave no checksum for {what}; refusing a file that cannot be verified")
    return RemoteFile(
        repo_id=repo_id,
        filename=filename,
        revision=revision,
        commit=meta.commit_hash,
        size=int(meta.size),
        sha256=sha256,
        git_oid=git_oid,
        url=urljoin(url, meta.location),
    )


@dataclass(frozen=True)
class RepoFile:
    """A file in a repository listing (``/api/models/{repo}/revision/{rev}?blobs=true``)."""

    path: str
    size: int | None
    sha256: str | None  # LFS files only


def list_repo_files(
    repo_id: str,
    revision: str = "main",
    *,
    endpoint: str | None = None,
    token: str | bool | None = None,
    retry: RetryPolicy | None = None,
    cancel: threading.Event | None = None,
) -> tuple[str, dict[str, RepoFile]]:
    """The commit a revision points at and the files in it, with sizes and LFS SHA-256s.

    Used before a multi-file download, to check the disk space for all the files at once and to fetch them
    all from one commit.
    """
    if is_offline():
        raise HubOfflineError(offline_message(endpoint))
    api = HfApi(endpoint=hub_endpoint(endpoint))

    def info() -> Any:
        return api.model_info(repo_id, revision=revision, files_metadata=True, token=token)

    model = _call_hub(info, _what(repo_id, None, revision), retry or RetryPolicy(), cancel, api.endpoint)
    files = {
        s.rfilename: RepoFile(s.rfilename, s.size, s.lfs.sha256 if s.lfs else None)
        for s in model.siblings or []
    }
    return str(model.sha), files


def check_disk_space(folder: Path, needed: int, what: str = "the download") -> None:
    """Raise DiskSpaceError unless ``folder``'s disk has ``needed`` bytes free."""
    folder = Path(folder)
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed:
        raise DiskSpaceError(
            f"not enough disk space for {what} in {folder}: {human_bytes(needed)} needed, {human_bytes(free)} free"
        )


class _Speed:
    """Bytes per second as a running average (time constant ``smoothing``) of the speed over successive
    intervals of at least ``interval`` seconds. The first interval is left out: it holds the burst of what the
    connection had buffered. Until the average exists, the speed since the first sample."""

    def __init__(self, interval: float = SPEED_INTERVAL, smoothing: float = SPEED_SMOOTHING) -> None:
        self.interval = interval
        self.smoothing = smoothing
        self.first: tuple[float, int] | None = None
        self.mark: tuple[float, int] | None = None  # where the interval being measured started
        self.intervals = 0
        self.smoothed: float | None = None

    def add(self, now: float, done: int) -> float:
        if self.first is None or self.mark is None:
            self.first = self.mark = (now, done)
            return 0.0
        t0, d0 = self.mark
        if now - t0 >= self.interval:
            rate = (done - d0) / (now - t0)
            self.mark = (now, done)
            self.intervals += 1
            if self.intervals == 1:
                pass  # the burst
            elif self.smoothed is None:
                self.smoothed = rate
            else:
                self.smoothed += (1.0 - math.exp(-(now - t0) / self.smoothing)) * (rate - self.smoothed)
        if self.smoothed is not None:
            return self.smoothed
        start, start_done = self.first
        return (done - start_done) / (now - start) if now > start else 0.0


class _CancelWatch:
    """Shuts the connection's socket when ``cancel`` is set, so a read blocked on a stalled connection
    returns at once instead of after the read timeout. Checked every 50 ms."""

    def __init__(self, cancel: threading.Event | None, response: httpx2.Response) -> None:
        self._cancel = cancel
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        stream = response.extensions.get("network_stream")
        self._sock: socket.socket | None = stream.get_extra_info("socket") if stream is not None else None
        self._thread: threading.Thread | None = None
        if cancel is not None and self._sock is not None:
            self._thread = threading.Thread(target=self._run, name="download-cancel-watch", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        assert self._cancel is not None and self._sock is not None
        while not self._stopped.wait(0.05):
            if self._cancel.is_set():
                with self._lock:
                    # Never touch the socket once the response is done: the pool may hand it to another request.
                    if not self._stopped.is_set():
                        with contextlib.suppress(OSError):
                            self._sock.shutdown(socket.SHUT_RDWR)
                return

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
        if self._thread is not None:
            self._thread.join()


@contextlib.contextmanager
def _watch(cancel: threading.Event | None, response: httpx2.Response) -> Iterator[None]:
    watch = _CancelWatch(cancel, response)
    try:
        yield
    finally:
        watch.stop()


class _Partial:
    """The ``.part`` file and the running checksums of the bytes in it (always in step with the file)."""

    def __init__(self, path: Path, remote: RemoteFile) -> None:
        self.path = path
        self.remote = remote
        self.offset = 0
        self._new_hashers()

    def _new_hashers(self) -> None:
        if self.remote.sha256:
            self.hasher = hashlib.sha256()
            self.sha256: Any | None = None
        else:
            # A git blob id is the SHA-1 of "blob <size>\0" followed by the content; keep a SHA-256 as well.
            self.hasher = hashlib.sha1(f"blob {self.remote.size}\0".encode())
            self.sha256 = hashlib.sha256()

    def load(self) -> None:
        """Hash what is already on disk (a resume)."""
        self._new_hashers()
        self.offset = 0
        with self.path.open("rb") as fh:
            while block := fh.read(1 << 20):
                self._update(block)

    def truncate(self) -> None:
        self.path.write_bytes(b"")
        self.offset = 0
        self._new_hashers()

    def _update(self, block: bytes) -> None:
        self.hasher.update(block)
        if self.sha256 is not None:
            self.sha256.update(block)
        self.offset += len(block)

    def append(self, fh: Any, block: bytes) -> None:
        fh.write(block)
        self._update(block)

    @property
    def checksum(self) -> str:
        prefix = "sha256" if self.remote.sha256 else "git-sha1"
        return f"{prefix}:{self.hasher.hexdigest()}"

    @property
    def sha256_hex(self) -> str:
        return str(self.hasher.hexdigest() if self.sha256 is None else self.sha256.hexdigest())


def _file_digests(path: Path, remote: RemoteFile) -> tuple[str, str]:
    """(checksum in RemoteFile.checksum form, SHA-256 hex) of a file on disk."""
    state = _Partial(path, remote)
    state.load()
    return state.checksum, state.sha256_hex


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return doc if isinstance(doc, dict) else None


def _meta_for(remote: RemoteFile) -> dict[str, Any]:
    return {
        "repo_id": remote.repo_id,
        "filename": remote.filename,
        "commit": remote.commit,
        "size": remote.size,
        "checksum": remote.checksum,
    }


def _resume_offset(part: Path, meta_path: Path, remote: RemoteFile) -> int:
    """Bytes of ``part`` that belong to ``remote``; deletes a partial file of another version of the file."""
    if not part.is_file():
        return 0
    meta = _read_meta(meta_path)
    size = part.stat().st_size
    wanted = _meta_for(remote)
    same = meta is not None and all(
        meta.get(k) == wanted[k] for k in ("repo_id", "filename", "size", "checksum")
    )
    if same and size <= remote.size:
        return size
    part.unlink()
    return 0


def _write_error(exc: OSError, dest: Path) -> DownloadError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return DiskSpaceError(
            f"the disk filled up while downloading to {dest.parent}; free some space and retry"
        )
    return DownloadError(f"cannot write {dest}: {exc.strerror or exc}")


def _paused(what: str, done: int, total: int) -> str:
    return f"download of {what} paused at {human_bytes(done)} of {human_bytes(total)}; it resumes from there next time"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def download_file(
    repo_id: str,
    filename: str,
    dest: Path,
    *,
    revision: str = "main",
    endpoint: str | None = None,
    token: str | bool | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    reserve_bytes: int = 0,
    retry: RetryPolicy | None = None,
    remote: RemoteFile | None = None,
) -> DownloadResult:
    """Download one file from the hub to ``dest``, resuming ``dest.part`` if an earlier attempt left one.

    Args:
        repo_id: e.g. ``Qwen/Qwen2.5-0.5B-Instruct-GGUF``.
        filename: path of the file in the repository.
        dest: where the verified file goes; its folder is created.
        revision: branch, tag or commit sha.
        endpoint: the hub's URL; defaults to ``HF_ENDPOINT`` (read at call time).
        token: passed to huggingface_hub (None: the stored login, if any).
        progress: called with a :class:`DownloadProgress` once at the start and after every chunk read from
            the network (up to 64 KiB; no throttling: a UI should throttle its redraws).
        cancel: set it from any thread to stop within ~0.1 s; raises DownloadCancelledError and keeps ``dest.part``.
        reserve_bytes: free space to keep beyond the file itself (room for the model build that follows).
        retry: retry policy for dropped connections and 5xx answers.
        remote: the file's metadata, if :func:`resolve_file` was already called.

    Raises:
        DownloadError: one of its subclasses, with a one-line message.
    """
    started = time.monotonic()
    retry = retry or RetryPolicy()
    dest = Path(dest)
    if remote is None:
        remote = resolve_file(
            repo_id, filename, revision, endpoint=endpoint, token=token, retry=retry, cancel=cancel
        )
    what = _what(repo_id, filename, revision)
    if dest.is_file() and dest.stat().st_size == remote.size:
        checksum, sha256 = _file_digests(dest, remote)
        if checksum == remote.checksum:
            return DownloadResult(dest, remote.size, sha256, remote.commit, remote.size, 0.0)
    part = part_path(dest)
    meta_path = dest.with_name(dest.name + PART_META_SUFFIX)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        offset = _resume_offset(part, meta_path, remote)
        check_disk_space(dest.parent, remote.size - offset + reserve_bytes, f"{filename} and its build")
        meta_path.write_text(json.dumps(_meta_for(remote), indent=2), encoding="utf-8")
        part.touch()
    except OSError as exc:
        raise _write_error(exc, dest) from None

    state = _Partial(part, remote)
    if offset:
        state.load()
    resumed_from = state.offset
    speed = _Speed()
    speed.add(time.monotonic(), state.offset)
    if progress is not None:
        progress(DownloadProgress(state.offset, remote.size, 0.0, None))
    fetch = _Fetch(remote, state, token, _origin(remote.url) == _origin(hub_endpoint(endpoint)), what)
    failures = 0
    while state.offset < remote.size:
        if cancel is not None and cancel.is_set():
            raise DownloadCancelledError(_paused(what, state.offset, remote.size))
        before = state.offset
        try:
            fetch.run(progress, speed, cancel)
        except DownloadError:
            raise
        except (httpx2.HTTPError, _RetryableError) as exc:
            if cancel is not None and cancel.is_set():
                raise DownloadCancelledError(_paused(what, state.offset, remote.size)) from None
            if isinstance(exc, httpx2.ProxyError):
                raise HubOfflineError(f"the proxy refused the connection to the hub ({exc})") from None
            if isinstance(exc, HfHubHTTPError) and exc.response is not None:
                raise _status_error(exc.response.status_code, what) from None
            if not _is_transient(exc):
                raise
            failures = 1 if state.offset > before else failures + 1
            if failures >= retry.attempts:
                raise _give_up(exc, what, failures, state.offset, remote.size, endpoint) from None
            _sleep(retry.wait(failures), cancel)
        except OSError as exc:
            raise _write_error(exc, dest) from None

    if state.offset != remote.size or state.checksum != remote.checksum:
        part.unlink(missing_ok=True)
        meta_path.unlink(missing_ok=True)
        raise ChecksumError(
            f"{what} arrived damaged (its checksum does not match the hub's); it was deleted and nothing was "
            "installed: try again"
        )
    try:
        part.replace(dest)
    except OSError as exc:
        raise _write_error(exc, dest) from None
    meta_path.unlink(missing_ok=True)
    return DownloadResult(
        dest, remote.size, state.sha256_hex, remote.commit, resumed_from, time.monotonic() - started
    )


def _give_up(
    exc: BaseException, what: str, failures: int, done: int, total: int, endpoint: str | None
) -> DownloadError:
    if isinstance(exc, _RetryableError) and exc.status:
        return _status_error(exc.status, what, failures)
    if _is_connect_failure(exc):
        return _unreachable(exc, endpoint)
    return ConnectionLostError(
        f"the connection keeps dropping while downloading {what} ({failures} tries in a row); "
        f"{human_bytes(done)} of {human_bytes(total)} are kept and the next attempt resumes from there"
    )


class _Fetch:
    """GET requests for the rest of one file, each continuing from where the ``.part`` file ends."""

    def __init__(
        self,
        remote: RemoteFile,
        state: _Partial,
        token: str | bool | None,
        same_origin: bool,
        what: str,
    ) -> None:
        self.remote = remote
        self.state = state
        self.what = what
        self.headers = build_hf_headers(token=token)
        if not same_origin:
            self.headers.pop("authorization", None)  # a CDN gets a signed URL, never the login token
        self.headers["Accept-Encoding"] = "identity"  # byte offsets must be offsets into the file itself

    def run(self, progress: ProgressCallback | None, speed: _Speed, cancel: threading.Event | None) -> None:
        """Fetch from ``state.offset`` to the end; raises on any shortfall (the caller decides to retry)."""
        state, remote = self.state, self.remote
        headers = dict(self.headers)
        if state.offset:
            headers["Range"] = f"bytes={state.offset}-"
        timeout = httpx2.Timeout(float(constants.HF_HUB_DOWNLOAD_TIMEOUT))
        with get_session().stream("GET", remote.url, headers=headers, timeout=timeout) as response:
            status = response.status_code
            if status in RETRY_STATUS:
                raise _RetryableError(f"HTTP {status}", status)
            if status == 416:
                state.truncate()  # the server cannot continue at our offset: start the file again
                raise _RetryableError("HTTP 416 (range not satisfiable)")
            if status >= 400:
                response.read()
                hf_raise_for_status(response)
            if state.offset and status == 200:
                state.truncate()  # the server ignored the Range and sends the whole file: take it all
            elif state.offset and not _continues_at(response, state.offset):
                state.truncate()
                raise _RetryableError("the server answered a different range than asked")
            with _watch(cancel, response), state.path.open("ab") as fh:
                # Chunks as they come off the socket (up to 64 KiB): every byte received reaches the file,
                # even when the connection drops right after (a fixed chunk size would lose the last part).
                for chunk in response.iter_bytes():
                    block = chunk[: remote.size - state.offset]  # never more than the hub announced
                    if not block:
                        continue
                    state.append(fh, block)
                    if progress is not None:
                        bps = speed.add(time.monotonic(), state.offset)
                        eta = (remote.size - state.offset) / bps if bps > 0 else None
                        progress(DownloadProgress(state.offset, remote.size, bps, eta))
                    if cancel is not None and cancel.is_set():
                        raise DownloadCancelledError(_paused(self.what, state.offset, remote.size))
                    if state.offset >= remote.size:
                        break
        if state.offset < remote.size:
            raise _RetryableError("the server closed the connection early")


def _continues_at(response: httpx2.Response, offset: int) -> bool:
    """True if a response to ``Range: bytes=OFFSET-`` is a 206 whose content starts at OFFSET."""
    content_range = response.headers.get("Content-Range", "")  # "bytes START-END/TOTAL"
    try:
        start = int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return False
    return start == offset
