"""``Registry``: one models folder, its index of installed models (``library.installed``) together with
installing into it (``library.install``), the one object the CLI and the app hold."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from qwen_desktop.library import install
from qwen_desktop.library.catalog import CatalogEntry
from qwen_desktop.library.install import BuildProgress, slug, write_prebuilt_manifest
from qwen_desktop.library.installed import (
    DOWNLOADS,
    INSTALL_FILE,
    REGISTRY_FILE,
    STAGING,
    InstalledModel,
    InstalledModels,
    default_models_dir,
    delete_model,
    get_default,
    list_models,
    set_default,
)

if TYPE_CHECKING:
    from qwen_desktop.library.download import ProgressCallback, RetryPolicy


class Registry(InstalledModels):
    """The installed models in one models folder, and installing more (see ``library.install``)."""

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
        """``install.install_from_download`` into this folder."""
        return install.install_from_download(
            self,
            name,
            catalog=catalog,
            precision=precision,
            endpoint=endpoint,
            token=token,
            on_download=on_download,
            on_build=on_build,
            cancel=cancel,
            retry=retry,
            keep_download=keep_download,
        )

    def import_model(
        self,
        path: Path,
        *,
        name: str | None = None,
        precision: str = "int4",
        on_build: BuildProgress | None = None,
        cancel: threading.Event | None = None,
    ) -> InstalledModel:
        """``install.import_model`` into this folder."""
        return install.import_model(
            self, path, name=name, precision=precision, on_build=on_build, cancel=cancel
        )


__all__ = [
    "DOWNLOADS",
    "INSTALL_FILE",
    "REGISTRY_FILE",
    "STAGING",
    "InstalledModel",
    "Registry",
    "default_models_dir",
    "delete_model",
    "get_default",
    "list_models",
    "set_default",
    "slug",
    "write_prebuilt_manifest",
]
