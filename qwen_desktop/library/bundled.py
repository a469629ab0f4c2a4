"""Models that come with the app: read-only folders of model folders, found with no setting.

Where they are looked for, in this order (the first folder that has a model of a given name wins):

1. the folders named by ``$QWEN_DESKTOP_BUNDLED_MODELS`` (several separated by ``os.pathsep``), for admins
   and tests;
2. ``models/`` beside the frozen executable (``sys.frozen``): where ``installer/build.py --with-model`` puts
   the model, in the .deb (``/opt/qwen-desktop/models``) and in the portable tarball
   (``qwen-desktop-<version>/models``) alike;
3. ``/opt/qwen-desktop/models``, the .deb's folder, also when the app runs from source on that machine.

Each folder holds model folders (``<folder>/<name>/manifest.json``), or is one itself. Nothing here is ever
written to, moved or deleted: ``InstalledModels`` lists these models after the user's own, and refuses to
delete them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

BUNDLED_ENV = "QWEN_DESKTOP_BUNDLED_MODELS"
DEB_MODELS = Path("/opt/qwen-desktop/models")


def bundled_dirs() -> list[Path]:
    """The folders of models that came with the app that exist now, in the order above, each once."""
    candidates = [Path(p).expanduser() for p in os.environ.get(BUNDLED_ENV, "").split(os.pathsep) if p]
    if getattr(sys, "frozen", False):
        candidates.append(Path(sys.executable).resolve().parent / "models")
    if sys.platform.startswith("linux"):
        candidates.append(DEB_MODELS)
    found: list[Path] = []
    seen: set[Path] = set()
    for folder in candidates:
        with contextlib.suppress(OSError):
            if not folder.is_dir():
                continue
            real = folder.resolve()
            if real not in seen:
                seen.add(real)
                found.append(folder)
    return found
