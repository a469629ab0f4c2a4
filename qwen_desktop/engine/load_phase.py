"""``LoadPhase``: the steps of a model load, as codes. ``ChatEngine`` reports them to its ``progress``; each
front end words them itself (the CLI in English with ``.text``, the window in its own language)."""

from __future__ import annotations

from enum import Enum


class LoadPhase(Enum):
    """One step of a model load, in the order they come."""

    READ_FOLDER = "read_folder"  # the folder's manifest, config and tokenizer files
    OPEN_GRAPHS = "open_graphs"  # ONNX Runtime sessions built (or read from the optimized-graph cache)
    WARM_UP = "warm_up"  # a short prompt and a few decode steps, so the first answer is not the slow one

    @property
    def text(self) -> str:
        """The step in English words (the CLI's, and what the window translates)."""
        return TEXTS[self]


TEXTS = {
    LoadPhase.READ_FOLDER: "Reading model folder…",
    LoadPhase.OPEN_GRAPHS: "Loading model…",
    LoadPhase.WARM_UP: "Warming up…",
}
