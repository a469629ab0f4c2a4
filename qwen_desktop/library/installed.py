"""The index of the models installed in a models folder: list them, describe them, the default, delete.

Layout of the models folder::

    <models>/registry.json            which model is the default, and an index of the installed models
    <models>/<name>/manifest.json     a model folder made by the builder (model.onnx, tokenizer.json, ...)
    <models>/<name>/install.json      where it came from: source, commit, checksum, display name, date
    <models>/.downloads/<name>/…      downloads in progress (``*.part``) and finished sources
    <models>/.staging/<name>          a model being built or copied; renamed to <models>/<name> when complete

The folders are the truth: a folder appears in :meth:`InstalledModels.list_models` only once it is complete
(the rename from ``.staging`` is the last step), and ``registry.json`` is rewritten after each change, so
losing it loses nothing but the choice of default. Installing (download, build, import) is ``library.install``.

Models that came with the app (``library.bundled``: ``models/`` beside the frozen executable, the .deb's
``/opt/qwen-desktop/models``, ``$QWEN_DESKTOP_BUNDLED_MODELS``) are listed after the user's own, marked
``bundled``; they are read, never written to or deleted, and are the default only while the user has no model
of their own (or chose one of them).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwen_desktop.engine.errors import ModelError, OutputError
from qwen_desktop.engine.manifest import MANIFEST, read_manifest, source_checksum
from qwen_desktop.engine.model_files import model_display_name, pretty_model_name

INSTALL_FILE = "install.json"
REGISTRY_FILE = "registry.json"
REGISTRY_FORMAT = "qwen-desktop-models"
DOWNLOADS = ".downloads"
STAGING = ".staging"


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
    problem: str = ""  # why the folder cannot be used (a damaged manifest); empty for a usable model
    bundled: bool = False  # came with the app (library.bundled): read-only, never deleted

    @property
    def broken(self) -> bool:
        """True for a folder that is listed only so that it can be deleted."""
        return bool(self.problem)

    @property
    def source_text(self) -> str:
        """One line saying where the weights came from."""
        src = self.source
        if self.bundled:
            return f"included with the app ({self.folder.parent})"
        if src.get("kind") == "hub":
            commit = str(src.get("commit") or "")[:10]
            files = src.get("files") or []
            where = f"{src.get('repo')}/{files[0]}" if len(files) == 1 else str(src.get("repo"))
            return f"{where} @ {commit}" if commit else where
        if src.get("kind") == "import":
            return f"imported from {src.get('path')}"
        return "unknown (folder found without install record)"


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write JSON through a temporary file and a rename, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    return doc if isinstance(doc, dict) else None


class InstalledModels:
    """The index of the installed models in one models folder: list, describe, default, delete, and the
    last step of every install (a complete staged folder moved into place). Installing itself is
    ``library.install``.

    Args:
        models_dir: the folder (created when needed). The app passes ``storage.paths.models_dir()``.
        bundled: read-only folders of models that came with the app; None (the default) looks them up
            (``library.bundled.bundled_dirs``), ``[]`` leaves them out.
    """

    def __init__(self, models_dir: Path, bundled: Sequence[Path] | None = None) -> None:
        self.models_dir = Path(models_dir)
        if bundled is None:
            from qwen_desktop.library.bundled import bundled_dirs

            bundled = bundled_dirs()
        self.bundled_dirs = [Path(b) for b in bundled if not _same_folder(Path(b), self.models_dir)]

    # ----------------------------------------------------------------- reading

    def list_models(self) -> list[InstalledModel]:
        """The installed models, sorted by name, the default one marked, then the models that came with the
        app (``bundled``; one whose name the user's folder already has is left out). A folder whose manifest
        cannot be read is listed too, ``broken`` with its ``problem``, so that it can be deleted."""
        found = self._scan() + self._scan_bundled()
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
        """The model to open at start: the one set as default, else the first of the user's own, else the
        first that came with the app; None if there is none."""
        return next((m for m in self.list_models() if m.is_default), None)

    def is_installed(self, name: str) -> bool:
        """True if a complete model folder called ``name`` exists."""
        return (self.models_dir / name / MANIFEST).is_file()

    def is_bundled(self, name: str) -> bool:
        """True if ``name`` is a model that came with the app (and the user has none of that name)."""
        return any(m.name == name for m in self._scan_bundled())

    def _scan(self) -> list[InstalledModel]:
        """The user's own models (the models folder)."""
        if not self.models_dir.is_dir():
            return []
        return [self._read(folder) for folder in _model_folders(self.models_dir)]

    def _scan_bundled(self) -> list[InstalledModel]:
        """The models that came with the app, first folder first; names the user's folder has are left out."""
        taken = {f.name for f in _model_folders(self.models_dir)} if self.models_dir.is_dir() else set()
        models = []
        for root in self.bundled_dirs:
            try:
                folders = [root] if (root / MANIFEST).is_file() else _model_folders(root)
            except OSError:  # unreadable: there is nothing to offer from it
                continue
            for folder in folders:
                if folder.name not in taken:
                    taken.add(folder.name)
                    models.append(self._read(folder, bundled=True))
        return models

    def _read(self, folder: Path, bundled: bool = False) -> InstalledModel:
        try:
            manifest = read_manifest(folder)
        except ModelError as exc:  # listed, never opened: the user can see it and delete it
            return _broken(folder, str(exc), bundled)
        return self._describe(folder, manifest, bundled)

    def _describe(self, folder: Path, manifest: dict[str, Any], bundled: bool = False) -> InstalledModel:
        record = read_json(folder / INSTALL_FILE) or {}
        precision = str(manifest.get("precision", "?"))
        base = _text(record.get("display_name")) or _text(manifest.get("display_name"))
        return InstalledModel(
            name=folder.name,
            display_name=model_display_name(base or pretty_model_name(folder.name), precision),
            folder=folder,
            precision=precision,
            head_precision=manifest.get("head_precision"),
            style=str(manifest.get("style", "?")),
            bytes_on_disk=folder_bytes(folder),
            checksum=str(record.get("checksum") or source_checksum(manifest)),
            source=dict(record.get("source") or {}),
            installed=str(record.get("installed", "")),
            bundled=bundled,
        )

    def _registry_doc(self) -> dict[str, Any]:
        return read_json(self.models_dir / REGISTRY_FILE) or {}

    def _default_name(self, models: list[InstalledModel]) -> str | None:
        """The chosen default if usable, else the user's first usable model, else the first bundled one."""
        chosen = self._registry_doc().get("default")
        names = [m.name for m in sorted(models, key=lambda m: m.bundled) if not m.broken]
        if chosen in names:
            return str(chosen)
        return names[0] if names else None

    # ----------------------------------------------------------------- changing

    def set_default(self, name: str) -> None:
        """Make ``name`` the model the app opens at start.

        Raises:
            ModelError: no such model, or a broken one.
        """
        model = self.get(name)
        if model.broken:
            raise ModelError(f"{name} cannot be the default: {model.problem}")
        self._save(default=name)

    def delete_model(self, name: str) -> None:
        """Delete an installed model's folder (its download cache too). The default falls back to another.

        Raises:
            ModelError: no such model, or the folder cannot be removed.
        """
        folder = self.models_dir / name
        if not self.is_installed(name) and self.is_bundled(name):
            raise ModelError(f"{name} is included with the app; it is read-only and cannot be deleted")
        if not name or name.startswith(".") or not self.is_installed(name):
            raise ModelError(f"no installed model is called '{name}' (see `qwen-desktop models`)")
        # Rename first: the model disappears at once and completely, even if the removal is interrupted.
        trash = self.models_dir / f".trash-{name}-{uuid.uuid4().hex[:8]}"
        try:
            folder.rename(trash)
        except OSError as exc:
            raise ModelError(f"cannot delete {folder}: {exc.strerror or exc}") from None
        shutil.rmtree(trash, ignore_errors=True)
        remove_folder(self.models_dir / DOWNLOADS / name)
        doc = self._registry_doc()
        self._save(default=None if doc.get("default") == name else doc.get("default"))

    def _save(self, default: str | None) -> None:
        self.models_dir.mkdir(parents=True, exist_ok=True)
        models = self._scan()  # the index is of this folder; the default may name a bundled model
        usable = [m.name for m in models + self._scan_bundled() if not m.broken]
        if default not in usable:
            default = usable[0] if usable else None
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
            | ({"problem": m.problem} if m.broken else {})
            for m in models
        ]
        write_json(
            self.models_dir / REGISTRY_FILE,
            {"format": REGISTRY_FORMAT, "format_version": 1, "default": default, "models": index},
        )

    def install_folder(self, staged: Path, name: str, record: dict[str, Any]) -> InstalledModel:
        """Write the install record into a complete staged folder and move it into place (atomic)."""
        target = self.models_dir / name
        record = {"name": name, "installed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())} | record
        write_json(staged / INSTALL_FILE, record)
        shown = _text(record.get("display_name"))
        manifest = read_json(staged / MANIFEST)
        if shown and manifest is not None and manifest.get("display_name") != shown:
            # The engine reads the manifest: the window and the Models page show the same name.
            write_json(staged / MANIFEST, manifest | {"display_name": shown})
        if target.exists():
            raise OutputError(f"{target} appeared while installing; nothing was overwritten")
        try:
            staged.rename(target)
        except OSError as exc:
            raise OutputError(f"cannot install {target}: {exc.strerror or exc}") from None
        doc = self._registry_doc()
        self._save(default=doc.get("default") if self.is_installed(str(doc.get("default"))) else name)
        return self.get(name)

    def staging_folder(self, name: str) -> Path:
        staged = self.models_dir / STAGING / name
        if staged.exists():
            shutil.rmtree(staged)  # left by an install that was killed
        staged.parent.mkdir(parents=True, exist_ok=True)
        return staged


def default_models_dir(override: str | None = None) -> Path:
    """The models folder: ``override`` (the settings' choice) or ``<user data folder>/models``."""
    from qwen_desktop.storage.paths import models_dir

    return models_dir(override)


def list_models(models_dir: Path) -> list[InstalledModel]:
    """``InstalledModels(models_dir).list_models()``."""
    return InstalledModels(models_dir).list_models()


def get_default(models_dir: Path) -> InstalledModel | None:
    """``InstalledModels(models_dir).get_default()``: the model to open at start, or None when none is installed."""
    return InstalledModels(models_dir).get_default()


def set_default(models_dir: Path, name: str) -> None:
    """``InstalledModels(models_dir).set_default(name)``."""
    InstalledModels(models_dir).set_default(name)


def delete_model(models_dir: Path, name: str) -> None:
    """``InstalledModels(models_dir).delete_model(name)``."""
    InstalledModels(models_dir).delete_model(name)


def remove_folder(folder: Path) -> None:
    """Remove a staging or download folder, and its parent if that is left empty."""
    shutil.rmtree(folder, ignore_errors=True)
    with contextlib.suppress(OSError):
        folder.parent.rmdir()


def _model_folders(root: Path) -> list[Path]:
    """The folders in ``root`` that look like model folders (a manifest), sorted by name."""
    return [f for f in sorted(root.iterdir()) if not f.name.startswith(".") and (f / MANIFEST).is_file()]


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _broken(folder: Path, problem: str, bundled: bool = False) -> InstalledModel:
    return InstalledModel(
        name=folder.name,
        display_name=folder.name,
        folder=folder,
        precision="?",
        head_precision=None,
        style="?",
        bytes_on_disk=folder_bytes(folder),
        checksum="",
        problem=problem,
        bundled=bundled,
    )


def _with_default(model: InstalledModel) -> InstalledModel:
    return InstalledModel(**{**model.__dict__, "is_default": True})


def _text(value: object) -> str:
    """A stored name, or "" when it is missing or not a string."""
    return value.strip() if isinstance(value, str) else ""
