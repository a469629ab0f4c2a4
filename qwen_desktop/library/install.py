"""Installing a model into a models folder: download from the hub (a GGUF to build, or a prebuilt ONNX
export), or import from disk (a GGUF file, a Hugging Face folder, a model folder, an ONNX export).

Every install works in ``<models>/.staging/<name>`` and ends with ``InstalledModels.install_folder``, which
moves the complete folder into place; a failure or a kill before that leaves nothing listed.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwen_desktop.engine.errors import ModelError, OutputError
from qwen_desktop.engine.manifest import MANIFEST, read_manifest, source_checksum
from qwen_desktop.engine.model_files import pretty_model_name
from qwen_desktop.library.catalog import CatalogEntry, find_entry, load_catalog
from qwen_desktop.library.installed import (
    DOWNLOADS,
    INSTALL_FILE,
    STAGING,
    InstalledModel,
    InstalledModels,
    folder_bytes,
    read_json,
    remove_folder,
    write_json,
)

if TYPE_CHECKING:
    from types import ModuleType

    from qwen_desktop.library.download import DownloadProgress, ProgressCallback, RetryPolicy


def _download() -> ModuleType:
    """The download module, imported on first use: it loads huggingface_hub and an HTTP stack (~0.5 s),
    which listing models or starting the app does not need."""
    from qwen_desktop.library import download

    return download


NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
# Bytes of built model per byte of q8_0 GGUF, with headroom: int4 layers and head plus the int8 prefill graph
# come to ~1.9, int8 ~2.4, fp32 (no prefill graph) ~3.8. The disk-space check asks for the download plus this.
BUILD_ROOM = {"int4": 2.2, "int8": 2.7, "fp32": 4.0}

BuildProgress = Callable[[str, int, int], None]


def slug(text: str) -> str:
    """A model name made from a file name: lower case, letters, digits, ``.``, ``_`` and ``-``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name[:80] or "model"


def _check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise ModelError(
            f"'{name}' cannot name a model: use lower-case letters, digits, '.', '_' and '-' (at most 80)"
        )


def _new_name(models: InstalledModels, name: str) -> None:
    _check_name(name)
    if (models.models_dir / name).exists():
        raise ModelError(
            f"a model called '{name}' is already installed in {models.models_dir}; "
            "delete it first or choose another name"
        )


def _cancellable(progress: BuildProgress | None, cancel: threading.Event | None) -> BuildProgress | None:
    """Wrap a build progress callback so that setting ``cancel`` stops the build at its next step (the
    builder removes its half-made folder when its progress callback raises)."""
    if cancel is None:
        return progress

    def report(stage: str, done: int, total: int) -> None:
        if cancel.is_set():
            raise _download().DownloadCancelledError(
                "cancelled while building; the downloaded file is kept for next time"
            )
        if progress is not None:
            progress(stage, done, total)

    return report


def _build(
    models: InstalledModels,
    src: Path,
    name: str,
    precision: str,
    record: dict[str, Any],
    progress: BuildProgress | None,
    cancel: threading.Event | None,
) -> InstalledModel:
    from qwen_desktop.convert.builder import build_model

    staged = models.staging_folder(name)
    try:
        build_model(src, staged, precision=precision, progress=_cancellable(progress, cancel))
        manifest = read_manifest(staged)
        record.setdefault("checksum", source_checksum(manifest))
        return models.install_folder(staged, name, record)
    finally:
        remove_folder(staged)


def install_from_download(
    models: InstalledModels,
    name: str,
    *,
    catalog: list[CatalogEntry] | None = None,
    precision: str | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    on_download: ProgressCallback | None = None,
    on_build: BuildProgress | None = None,
    cancel: threading.Event | None = None,
    retry: RetryPolicy | None = None,
    keep_download: bool = False,
) -> InstalledModel:
    """Download a catalogue model, verify it, build it and register it.

    A cancelled or failed download leaves its ``.part`` file in ``<models>/.downloads/<name>/``; calling this
    again resumes it. Nothing appears in :meth:`InstalledModels.list_models` before the model folder is complete.

    Args:
        name: a catalogue name, e.g. ``qwen2.5-0.5b-instruct``.
        catalog: the catalogue to use (default: the packaged one).
        precision: build precision (default: the entry's). A precision other than the entry's installs
            as ``<name>-<precision>``.
        endpoint: the hub's URL (default: ``HF_ENDPOINT``).
        token: passed to huggingface_hub.
        on_download: download progress (bytes, speed, time left).
        on_build: build progress ``(stage, done, total)``.
        cancel: set from any thread to stop; raises DownloadCancelledError.
        retry: retry policy for the download.
        keep_download: keep the downloaded GGUF after the build (default: delete it, it is not needed).

    Raises:
        ModelError: with a one-line message (DownloadError subclasses for hub and network problems).
    """
    entry = find_entry(name, load_catalog() if catalog is None else catalog)
    precision = precision or entry.precision
    install_name = entry.name if precision == entry.precision else f"{entry.name}-{precision}"
    if entry.kind == "onnx" and precision != entry.precision:
        raise ModelError(f"{entry.name} is prebuilt at {entry.precision}; it cannot be built to {precision}")
    _new_name(models, install_name)
    if entry.kind == "onnx":
        return _install_onnx(models, entry, endpoint, token, on_download, cancel, retry)
    filename = entry.files[0]
    remote = _download().resolve_file(
        entry.repo, filename, entry.revision, endpoint=endpoint, token=token, retry=retry, cancel=cancel
    )
    dest = models.models_dir / DOWNLOADS / entry.name / Path(filename).name
    result = _download().download_file(
        entry.repo,
        filename,
        dest,
        revision=entry.revision,
        endpoint=endpoint,
        token=token,
        progress=on_download,
        cancel=cancel,
        reserve_bytes=int(remote.size * BUILD_ROOM.get(precision, 4.0)),
        retry=retry,
        remote=remote,
    )
    record = {
        "display_name": entry.display_name,  # the precision is added where it is shown
        "catalog_name": entry.name,
        "license": entry.license,
        "checksum": result.sha256,
        "source": {
            "kind": "hub",
            "repo": entry.repo,
            "revision": entry.revision,
            "commit": result.commit,
            "files": [filename],
            "sha256": result.sha256,
            "bytes": result.size,
        },
    }
    model = _build(models, result.path, install_name, precision, record, on_build, cancel)
    if not keep_download:
        remove_folder(dest.parent)
    return model


def _install_onnx(
    models: InstalledModels,
    entry: CatalogEntry,
    endpoint: str | None,
    token: str | bool | None,
    on_download: ProgressCallback | None,
    cancel: threading.Event | None,
    retry: RetryPolicy | None,
) -> InstalledModel:
    """Download a prebuilt ONNX export file by file (all from one commit), then register it as it is."""
    commit, listing = _download().list_repo_files(
        entry.repo, entry.revision, endpoint=endpoint, token=token, retry=retry, cancel=cancel
    )
    missing = [f for f in entry.files if f not in listing]
    if missing:
        raise ModelError(f"{entry.repo} has no {', '.join(missing)} at revision {entry.revision}")
    total = sum(listing[f].size or 0 for f in entry.files)
    downloads = models.models_dir / DOWNLOADS / entry.name
    # An install killed after moving its verified files into staging: take them back, so they are not
    # downloaded again (download_file keeps a complete file whose size matches).
    _move_back(models.models_dir / STAGING / entry.name, downloads, entry.files)
    _download().check_disk_space(models.models_dir, 2 * total, f"{entry.name}")
    done_before = 0
    sha256s: dict[str, str] = {}
    for filename in entry.files:

        def overall(p: DownloadProgress, base: int = done_before) -> None:
            if on_download is not None:
                on_download(
                    _download().DownloadProgress(
                        base + p.done, total, p.speed, _eta(total - base - p.done, p.speed)
                    )
                )

        result = _download().download_file(
            entry.repo,
            filename,
            downloads / filename,
            revision=commit,
            endpoint=endpoint,
            token=token,
            progress=overall,
            cancel=cancel,
            retry=retry,
        )
        expected = listing[filename].sha256
        if expected and expected != result.sha256:
            raise ModelError(f"{entry.repo}/{filename}: the file does not match the repository listing")
        sha256s[filename] = result.sha256
        done_before += result.size
    files = [{"name": f, "sha256": sha256s[f], "bytes": (downloads / f).stat().st_size} for f in entry.files]
    # Checked while the files are still in the download folder: a bad config.json costs no download.
    manifest = prebuilt_manifest(
        downloads, str(entry.model_file), entry.precision, f"{entry.repo}@{commit}", files
    )
    record = {
        "display_name": entry.display_name,
        "catalog_name": entry.name,
        "license": entry.license,
        "checksum": sha256s[str(entry.model_file)],
        "source": {
            "kind": "hub",
            "repo": entry.repo,
            "revision": entry.revision,
            "commit": commit,
            "files": list(entry.files),
            "sha256": sha256s[str(entry.model_file)],
            "bytes": total,
        },
    }
    staged = models.staging_folder(entry.name)
    try:
        for filename in entry.files:
            (staged / filename).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(downloads / filename, staged / filename)  # a rename: same disk
        write_json(staged / MANIFEST, manifest)
        model = models.install_folder(staged, entry.name, record)
    except BaseException:
        _move_back(staged, downloads, entry.files)  # the verified downloads are kept for the next try
        raise
    finally:
        remove_folder(staged)
    remove_folder(downloads)
    return model


def _move_back(staged: Path, downloads: Path, files: tuple[str, ...] | list[str]) -> None:
    """Move ``files`` found in ``staged`` back into ``downloads`` (where a download would put them)."""
    for filename in files:
        moved = staged / filename
        if moved.is_file() and not (downloads / filename).exists():
            (downloads / filename).parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.move(moved, downloads / filename)


def import_model(
    models: InstalledModels,
    path: Path,
    *,
    name: str | None = None,
    precision: str = "int4",
    on_build: BuildProgress | None = None,
    cancel: threading.Event | None = None,
) -> InstalledModel:
    """Install a model from disk.

    A GGUF file or a Hugging Face folder (``config.json`` + ``*.safetensors``) is built here at
    ``precision``. A folder that already runs as it is, one with our ``manifest.json`` or a hub ONNX export
    (``config.json``, ``tokenizer.json``, ``onnx/model_q4.onnx`` …), is copied, and an export is given a
    manifest.

    Raises:
        ModelError: with a one-line message.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"{path}: no such file or folder")
    model_name = name or slug(path.stem if path.is_file() else path.name)
    record: dict[str, Any] = {
        "display_name": pretty_model_name(path.name),
        "source": {"kind": "import", "path": str(path.resolve())},
    }
    if path.is_file() or any(path.glob("*.safetensors")):
        _new_name(models, model_name)
        size = folder_bytes(path) if path.is_dir() else path.stat().st_size
        room = int(size * BUILD_ROOM.get(precision, 4.0))
        _download().check_disk_space(models.models_dir, room, f"building {path.name}")
        return _build(models, path, model_name, precision, record, on_build, cancel)
    if (path / MANIFEST).is_file():
        own = read_manifest(path).get("display_name")  # refuses anything that is not a complete engine folder
        if isinstance(own, str) and own.strip():
            record["display_name"] = own.strip()
        return _copy_in(models, path, model_name, record, None)
    graph = _hub_graph(path) if (path / "config.json").is_file() else None
    if graph is None:
        raise ModelError(
            f"{path}: not a model: expected a .gguf file, a Hugging Face folder (config.json, "
            "*.safetensors), an ONNX export (config.json, onnx/model*.onnx) or a Qwen Desktop model folder"
        )
    return _copy_in(models, path, model_name, record, graph)


def _copy_in(
    models: InstalledModels, path: Path, name: str, record: dict[str, Any], graph: str | None
) -> InstalledModel:
    """Copy a runnable folder into the models folder; ``graph`` set means a hub export needing a manifest."""
    _new_name(models, name)
    _download().check_disk_space(models.models_dir, folder_bytes(path), f"copying {path.name}")
    staged = models.staging_folder(name)
    try:
        shutil.copytree(path, staged, ignore=shutil.ignore_patterns(INSTALL_FILE, ".cache", ".git"))
        if graph is not None:
            from qwen_desktop.convert.builder import sha256_file

            source = [
                {
                    "name": graph,
                    "sha256": sha256_file(staged / graph),
                    "bytes": (staged / graph).stat().st_size,
                }
            ]
            write_prebuilt_manifest(staged, graph, _export_precision(graph), path.name, source)
        record["checksum"] = source_checksum(read_manifest(staged))
        return models.install_folder(staged, name, record)
    except OSError as exc:
        raise OutputError(f"cannot copy {path} into {models.models_dir}: {exc.strerror or exc}") from None
    finally:
        remove_folder(staged)


def _export_precision(graph: str) -> str:
    """What a hub export's file name says about its weights (model_q4.onnx -> int4)."""
    stem = Path(graph).stem
    for marker, precision in (("q4", "int4"), ("bnb4", "int4"), ("int8", "int8"), ("quantized", "int8")):
        if marker in stem:
            return precision
    return "fp16" if "fp16" in stem else "fp32"


def _eta(remaining: int, speed: float) -> float | None:
    return remaining / speed if speed > 0 else None


def _hub_graph(folder: Path) -> str | None:
    """The graph of a hub ONNX export in ``folder`` (relative path), the way the engine picks it; else None."""
    from qwen_desktop.engine.model_files import HUB_GRAPH_CANDIDATES

    return next((c for c in HUB_GRAPH_CANDIDATES if (folder / c).is_file()), None)


def write_prebuilt_manifest(
    folder: Path, model_file: str, precision: str, source_name: str, source_files: list[dict[str, Any]]
) -> None:
    """Give a hub ONNX export (``config.json``, ``tokenizer.json``, an ONNX graph) a ``manifest.json``, so it
    is listed, described and loaded like a folder our builder made. The export's layout is kept.

    Raises:
        ModelError: the export's config.json or tokenizer.json is missing or unusable.
    """
    write_json(folder / MANIFEST, prebuilt_manifest(folder, model_file, precision, source_name, source_files))


def prebuilt_manifest(
    folder: Path, model_file: str, precision: str, source_name: str, source_files: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ``manifest.json`` that ``write_prebuilt_manifest`` writes, made from the export in ``folder``.

    Raises:
        ModelError: the export's config.json or tokenizer.json is missing or unusable.
    """
    from qwen_desktop import __version__
    from qwen_desktop.convert.tokenizer_files import stop_ids_from_vocab
    from qwen_desktop.engine.manifest import MANIFEST_FORMAT, MANIFEST_VERSION

    cfg = read_json(folder / "config.json") or {}
    tcfg = read_json(folder / "tokenizer_config.json") or {}
    tok = read_json(folder / "tokenizer.json")
    if tok is None or not isinstance(tok.get("model"), dict):
        raise ModelError(f"{source_name}: tokenizer.json is missing or corrupt")
    lookup = dict(tok["model"].get("vocab", {}))
    lookup.update({t["content"]: int(t["id"]) for t in tok.get("added_tokens", [])})
    eos: Any = cfg.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) and eos else eos
    stops, end_of_turn = stop_ids_from_vocab(lookup, None if eos is None else int(eos))
    template = tcfg.get("chat_template")
    if isinstance(template, list):  # newer files keep named templates in a list
        template = next((t.get("template") for t in template if t.get("name") == "default"), None)
    try:
        hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
        config = {
            "vocab_size": int(cfg["vocab_size"]),
            "hidden_size": hidden,
            "intermediate_size": int(cfg["intermediate_size"]),
            "num_layers": int(cfg["num_hidden_layers"]),
            "num_heads": heads,
            "num_kv_heads": int(cfg.get("num_key_value_heads", heads)),
            "rope_theta": float(cfg.get("rope_theta", 1_000_000.0)),
            "rms_norm_eps": float(cfg.get("rms_norm_eps", 1e-6)),
            "max_context": int(cfg.get("max_position_embeddings", 32768)),
            "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
            "head_dim": hidden // heads if heads > 0 else 0,
        }
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise ModelError(f"{source_name}: config.json has no usable {exc}") from None
    bad = [
        k
        for k in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "max_context",
        )
        if config[k] <= 0
    ]
    if bad or config["hidden_size"] % config["num_heads"] or config["num_heads"] % config["num_kv_heads"]:
        raise ModelError(
            f"{source_name}: config.json gives impossible sizes "
            f"({', '.join(bad) or 'hidden_size, num_attention_heads and num_key_value_heads do not divide'})"
        )
    if cfg.get("model_type") != "qwen2":
        raise ModelError(f"{source_name}: architecture '{cfg.get('model_type')}' is not supported")
    return {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_VERSION,
        "architecture": "qwen2",
        "style": "plain",  # hub exports have the inputs and outputs of onnx_writer's "plain" style
        "precision": precision,
        "head_precision": None,  # an export does not record it
        "prebuilt": True,
        "config": config,
        "max_context": config["max_context"],
        "eos_token_ids": list(stops),
        "end_of_turn_id": end_of_turn,
        "bos_token_id": cfg.get("bos_token_id"),
        "pad_token_id": lookup.get("<|endoftext|>"),
        "chat_template": template,
        "files": {"model": model_file, "tokenizer": "tokenizer.json"},
        "display_name": pretty_model_name(source_name),
        "source": {"name": source_name, "files": source_files},
        "builder": {"name": "qwen-desktop (prebuilt ONNX export)", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
