"""The models installed in a models folder: install (download, build, register), import, list, delete, default.

Layout of the models folder::

    <models>/registry.json            which model is the default, and an index of the installed models
    <models>/<name>/manifest.json     a model folder made by the builder (model.onnx, tokenizer.json, ...)
    <models>/<name>/install.json      where it came from: source, commit, checksum, display name, date
    <models>/.downloads/<name>/…      downloads in progress (``*.part``) and finished sources
    <models>/.staging/<name>          a model being built or copied; renamed to <models>/<name> when complete

The folders are the truth: a folder appears in :meth:`Registry.list_models` only once it is complete (the
rename from ``.staging`` is the last step), and ``registry.json`` is rewritten after each change, so losing it
loses nothing but the choice of default.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwen_desktop.engine.errors import ModelError, OutputError
from qwen_desktop.engine.manifest import read_manifest
from qwen_desktop.library.catalog import CatalogEntry, find_entry, load_catalog

if TYPE_CHECKING:
    from types import ModuleType

    from qwen_desktop.library.download import DownloadProgress, ProgressCallback, RetryPolicy


def _download() -> ModuleType:
    """The download module, imported on first use: it loads huggingface_hub and an HTTP stack (~0.5 s),
    which listing models or starting the app does not need."""
    from qwen_desktop.library import download

    return download


MANIFEST = "manifest.json"  # builder.MANIFEST; the builder (and onnx) is imported only when needed
INSTALL_FILE = "install.json"
REGISTRY_FILE = "registry.json"
REGISTRY_FORMAT = "qwen-desktop-models"
DOWNLOADS = ".downloads"
STAGING = ".staging"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
# Bytes of built model per byte of q8_0 GGUF, with headroom: int4 layers and head plus the int8 prefill graph
# come to ~1.9, int8 ~2.4, fp32 (no prefill graph) ~3.8. The disk-space check asks for the download plus this.
BUILD_ROOM = {"int4": 2.2, "int8": 2.7, "fp32": 4.0}

BuildProgress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class InstalledModel:
    """A model folder in the models folder, with where it came from."""

    name: str
    display_name: str
    folder: Path
    precision: str
    head_precision: str | None
    style: str
    bytes_on_disk: int
    checksum: str  # SHA-256 of the source weights (the downloaded or imported file)
    source: dict[str, Any] = field(default_factory=dict)
    installed: str = ""
    is_default: bool = False

    @property
    def source_text(self) -> str:
        """One line saying where the weights came from."""
        src = self.source
        if src.get("kind") == "hub":
            commit = str(src.get("commit") or "")[:10]
            files = src.get("files") or []
            where = f"{src.get('repo')}/{files[0]}" if len(files) == 1 else str(src.get("repo"))
            return f"{where} @ {commit}" if commit else where
        if src.get("kind") == "import":
            return f"imported from {src.get('path')}"
        return "unknown (folder found without install record)"


def slug(text: str) -> str:
    """A model name made from a file name: lower case, letters, digits, ``.``, ``_`` and ``-``."""
    name = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return name[:80] or "model"


def _check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise ModelError(
            f"'{name}' cannot name a model: use lower-case letters, digits, '.', '_' and '-' (at most 80)"
        )


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _source_checksum(manifest: dict[str, Any]) -> str:
    """The SHA-256 of the source file, or for several files the SHA-256 of their ``name sha256`` lines."""
    files = manifest.get("source", {}).get("files", [])
    if len(files) == 1:
        return str(files[0].get("sha256", ""))
    lines = "".join(
        f"{f.get('name')} {f.get('sha256')}\n" for f in sorted(files, key=lambda f: str(f.get("name")))
    )
    return hashlib.sha256(lines.encode()).hexdigest() if files else ""


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return doc if isinstance(doc, dict) else None


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


class Registry:
    """The installed models in one models folder.

    Args:
        models_dir: the folder (created when needed). The app passes ``storage.paths.models_dir()``.
    """

    def __init__(self, models_dir: Path) -> None:
        self.models_dir = Path(models_dir)

    # ----------------------------------------------------------------- reading

    def list_models(self) -> list[InstalledModel]:
        """The installed models, sorted by name, the default one marked."""
        found = self._scan()
        default = self._default_name(found)
        return [m if m.name != default else _with_default(m) for m in found]

    def get(self, name: str) -> InstalledModel:
        """The installed model called ``name``.

        Raises:
            ModelError: no such model.
        """
        for model in self.list_models():
            if model.name == name:
                return model
        raise ModelError(f"no installed model is called '{name}' (see `qwen-desktop models`)")

    def get_default(self) -> InstalledModel | None:
        """The model to open at start: the one set as default, else the first installed; None if none is."""
        return next((m for m in self.list_models() if m.is_default), None)

    def is_installed(self, name: str) -> bool:
        """True if a complete model folder called ``name`` exists."""
        return (self.models_dir / name / MANIFEST).is_file()

    def _scan(self) -> list[InstalledModel]:
        if not self.models_dir.is_dir():
            return []
        models = []
        for folder in sorted(self.models_dir.iterdir()):
            if folder.name.startswith(".") or not (folder / MANIFEST).is_file():
                continue
            try:
                manifest = read_manifest(folder)
            except ModelError:
                continue  # a damaged folder is not offered; `qwen-desktop models` shows only usable models
            models.append(self._describe(folder, manifest))
        return models

    def _describe(self, folder: Path, manifest: dict[str, Any]) -> InstalledModel:
        record = _read_json(folder / INSTALL_FILE) or {}
        return InstalledModel(
            name=folder.name,
            display_name=str(record.get("display_name") or folder.name),
            folder=folder,
            precision=str(manifest.get("precision", "?")),
            head_precision=manifest.get("head_precision"),
            style=str(manifest.get("style", "?")),
            bytes_on_disk=_folder_bytes(folder),
            checksum=str(record.get("checksum") or _source_checksum(manifest)),
            source=dict(record.get("source") or {}),
            installed=str(record.get("installed", "")),
        )

    def _registry_doc(self) -> dict[str, Any]:
        return _read_json(self.models_dir / REGISTRY_FILE) or {}

    def _default_name(self, models: list[InstalledModel]) -> str | None:
        chosen = self._registry_doc().get("default")
        names = [m.name for m in models]
        if chosen in names:
            return str(chosen)
        return names[0] if names else None

    # ----------------------------------------------------------------- changing

    def set_default(self, name: str) -> None:
        """Make ``name`` the model the app opens at start.

        Raises:
            ModelError: no such model.
        """
        if not self.is_installed(name):
            raise ModelError(f"no installed model is called '{name}' (see `qwen-desktop models`)")
        self._save(default=name)

    def delete_model(self, name: str) -> None:
        """Delete an installed model's folder (its download cache too). The default falls back to another.

        Raises:
            ModelError: no such model, or the folder cannot be removed.
        """
        folder = self.models_dir / name
        if not name or name.startswith(".") or not self.is_installed(name):
            raise ModelError(f"no installed model is called '{name}' (see `qwen-desktop models`)")
        # Rename first: the model disappears at once and completely, even if the removal is interrupted.
        trash = self.models_dir / f".trash-{name}-{uuid.uuid4().hex[:8]}"
        try:
            folder.rename(trash)
        except OSError as exc:
            raise ModelError(f"cannot delete {folder}: {exc.strerror or exc}") from None
        shutil.rmtree(trash, ignore_errors=True)
        _remove(self.models_dir / DOWNLOADS / name)
        doc = self._registry_doc()
        self._save(default=None if doc.get("default") == name else doc.get("default"))

    def _save(self, default: str | None) -> None:
        self.models_dir.mkdir(parents=True, exist_ok=True)
        models = self._scan()
        if default is None and models:
            default = models[0].name
        index = [
            {
                "name": m.name,
                "display_name": m.display_name,
                "precision": m.precision,
                "bytes": m.bytes_on_disk,
                "source": m.source_text,
                "checksum": m.checksum,
                "default": m.name == default,
            }
            for m in models
        ]
        _write_json(
            self.models_dir / REGISTRY_FILE,
            {"format": REGISTRY_FORMAT, "format_version": 1, "default": default, "models": index},
        )

    def _install_folder(self, staged: Path, name: str, record: dict[str, Any]) -> InstalledModel:
        """Write the install record into a complete staged folder and move it into place (atomic)."""
        target = self.models_dir / name
        record = {"name": name, "installed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())} | record
        _write_json(staged / INSTALL_FILE, record)
        if target.exists():
            raise OutputError(f"{target} appeared while installing; nothing was overwritten")
        try:
            staged.rename(target)
        except OSError as exc:
            raise OutputError(f"cannot install {target}: {exc.strerror or exc}") from None
        doc = self._registry_doc()
        self._save(default=doc.get("default") if self.is_installed(str(doc.get("default"))) else name)
        return self.get(name)

    def _staging(self, name: str) -> Path:
        staged = self.models_dir / STAGING / name
        if staged.exists():
            shutil.rmtree(staged)  # left by an install that was killed
        staged.parent.mkdir(parents=True, exist_ok=True)
        return staged

    def _new_name(self, name: str) -> None:
        _check_name(name)
        if (self.models_dir / name).exists():
            raise ModelError(
                f"a model called '{name}' is already installed in {self.models_dir}; "
                "delete it first or choose another name"
            )

    def _build(
        self,
        src: Path,
        name: str,
        precision: str,
        record: dict[str, Any],
        progress: BuildProgress | None,
        cancel: threading.Event | None,
    ) -> InstalledModel:
        from qwen_desktop.convert.builder import build_model

        staged = self._staging(name)
        try:
            build_model(src, staged, precision=precision, progress=_cancellable(progress, cancel))
            manifest = read_manifest(staged)
            record.setdefault("checksum", _source_checksum(manifest))
            return self._install_folder(staged, name, record)
        finally:
            _remove(staged)

    # ----------------------------------------------------------------- installing

    def install_from_download(
        self,
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
        again resumes it. Nothing appears in :meth:`list_models` before the model folder is complete.

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
            raise ModelError(
                f"{entry.name} is prebuilt at {entry.precision}; it cannot be built to {precision}"
            )
        self._new_name(install_name)
        if entry.kind == "onnx":
            return self._install_onnx(entry, endpoint, token, on_download, cancel, retry)
        filename = entry.files[0]
        remote = _download().resolve_file(
            entry.repo, filename, entry.revision, endpoint=endpoint, token=token, retry=retry, cancel=cancel
        )
        dest = self.models_dir / DOWNLOADS / entry.name / Path(filename).name
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
            "display_name": entry.display_name
            if install_name == entry.name
            else f"{entry.display_name} ({precision})",
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
        model = self._build(result.path, install_name, precision, record, on_build, cancel)
        if not keep_download:
            _remove(dest.parent)
        return model

    def _install_onnx(
        self,
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
        downloads = self.models_dir / DOWNLOADS / entry.name
        _download().check_disk_space(self.models_dir, 2 * total, f"{entry.name}")
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
        staged = self._staging(entry.name)
        try:
            files = []
            for filename in entry.files:
                (staged / filename).parent.mkdir(parents=True, exist_ok=True)
                size = (downloads / filename).stat().st_size
                shutil.move(downloads / filename, staged / filename)  # a rename: same disk
                files.append({"name": filename, "sha256": sha256s[filename], "bytes": size})
            write_prebuilt_manifest(
                staged, str(entry.model_file), entry.precision, f"{entry.repo}@{commit}", files
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
            model = self._install_folder(staged, entry.name, record)
        finally:
            _remove(staged)
        _remove(downloads)
        return model

    def import_model(
        self,
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
            "display_name": path.name,
            "source": {"kind": "import", "path": str(path.resolve())},
        }
        if path.is_file() or any(path.glob("*.safetensors")):
            self._new_name(model_name)
            size = _folder_bytes(path) if path.is_dir() else path.stat().st_size
            room = int(size * BUILD_ROOM.get(precision, 4.0))
            _download().check_disk_space(self.models_dir, room, f"building {path.name}")
            return self._build(path, model_name, precision, record, on_build, cancel)
        if (path / MANIFEST).is_file():
            read_manifest(path)  # refuses anything that is not a complete engine folder
            return self._copy_in(path, model_name, record, None)
        graph = _hub_graph(path) if (path / "config.json").is_file() else None
        if graph is None:
            raise ModelError(
                f"{path}: not a model: expected a .gguf file, a Hugging Face folder (config.json, "
                "*.safetensors), an ONNX export (config.json, onnx/model*.onnx) or a Qwen Desktop model folder"
            )
        return self._copy_in(path, model_name, record, graph)

    def _copy_in(self, path: Path, name: str, record: dict[str, Any], graph: str | None) -> InstalledModel:
        """Copy a runnable folder into the models folder; ``graph`` set means a hub export needing a manifest."""
        self._new_name(name)
        _download().check_disk_space(self.models_dir, _folder_bytes(path), f"copying {path.name}")
        staged = self._staging(name)
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
            record["checksum"] = _source_checksum(read_manifest(staged))
            return self._install_folder(staged, name, record)
        except OSError as exc:
            raise OutputError(f"cannot copy {path} into {self.models_dir}: {exc.strerror or exc}") from None
        finally:
            _remove(staged)


def _export_precision(graph: str) -> str:
    """What a hub export's file name says about its weights (model_q4.onnx -> int4)."""
    stem = Path(graph).stem
    for marker, precision in (("q4", "int4"), ("bnb4", "int4"), ("int8", "int8"), ("quantized", "int8")):
        if marker in stem:
            return precision
    return "fp16" if "fp16" in stem else "fp32"


def default_models_dir(override: str | None = None) -> Path:
    """The models folder: ``override`` (the settings' choice) or ``<user data folder>/models``."""
    from qwen_desktop.storage.paths import models_dir

    return models_dir(override)


def list_models(models_dir: Path) -> list[InstalledModel]:
    """``Registry(models_dir).list_models()``."""
    return Registry(models_dir).list_models()


def get_default(models_dir: Path) -> InstalledModel | None:
    """``Registry(models_dir).get_default()``: the model to open at start, or None when none is installed."""
    return Registry(models_dir).get_default()


def set_default(models_dir: Path, name: str) -> None:
    """``Registry(models_dir).set_default(name)``."""
    Registry(models_dir).set_default(name)


def delete_model(models_dir: Path, name: str) -> None:
    """``Registry(models_dir).delete_model(name)``."""
    Registry(models_dir).delete_model(name)


def _remove(folder: Path) -> None:
    """Remove a staging or download folder, and its parent if that is left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.parent.rmdir()


def _with_default(model: InstalledModel) -> InstalledModel:
    return InstalledModel(**{**model.__dict__, "is_default": True})


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
    from qwen_desktop import __version__
    from qwen_desktop.convert.tokenizer_files import stop_ids_from_vocab
    from qwen_desktop.engine.manifest import MANIFEST_FORMAT, MANIFEST_VERSION

    cfg = _read_json(folder / "config.json") or {}
    tcfg = _read_json(folder / "tokenizer_config.json") or {}
    tok = _read_json(folder / "tokenizer.json")
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
            "head_dim": hidden // heads,
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{source_name}: config.json has no usable {exc}") from None
    if cfg.get("model_type") != "qwen2":
        raise ModelError(f"{source_name}: architecture '{cfg.get('model_type')}' is not supported")
    manifest = {
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
        "source": {"name": source_name, "files": source_files},
        "builder": {"name": "qwen-desktop (prebuilt ONNX export)", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    _write_json(folder / MANIFEST, manifest)
