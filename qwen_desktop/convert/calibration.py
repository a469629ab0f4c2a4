"""Calibration activations for the 4-bit fit: what each linear layer sees on a short, mixed text.

The builder runs ``data/calibration.txt`` (about 1150 tokens of ChatML chat: code, prose, lists, Chinese)
through the float model once, with the numpy reference, and keeps the input of every linear layer. The
error-feedback fit (``quant.quantize_gptq``) then chooses 4-bit codes that keep those layers' outputs close
to the float ones, which is what lets the MLP's largest matrix use blocks of 64 (docs/models.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from importlib import resources

import numpy as np

from qwen_desktop.convert.reference import ReferenceModel
from qwen_desktop.convert.weights import QwenConfig

# Fewer usable tokens than this (a tiny test tokenizer, a vocabulary that drops most of the text) and the
# inputs say too little about the layers: the builder falls back to the plain fit.
MIN_TOKENS = 64
# At most this many tokens, in one reference pass (each weight is read from the source once). Qwen's
# tokenizer reads the text as ~1150; a byte-level test tokenizer reads more, and attention grows with the
# square of the length.
MAX_TOKENS = 1200


def calibration_text() -> str:
    return resources.files("qwen_desktop").joinpath("data/calibration.txt").read_text(encoding="utf-8")


def calibration_ids(tokenizer_json: str, cfg: QwenConfig) -> list[int]:
    """The calibration text in the model's own tokens (special tokens such as ``<|im_start|>`` included),
    at most ``MAX_TOKENS`` and the model's context."""
    from tokenizers import Tokenizer

    ids = Tokenizer.from_str(tokenizer_json).encode(calibration_text(), add_special_tokens=False).ids
    return [i for i in ids if 0 <= i < cfg.vocab_size][: min(MAX_TOKENS, cfg.max_context)]


class _LazyWeights(Mapping[str, np.ndarray]):
    """The source's tensors, read when the reference asks for them and not kept (one layer at a time)."""

    def __init__(self, fetch: Callable[[str], np.ndarray]) -> None:
        self._fetch = fetch

    def __getitem__(self, name: str) -> np.ndarray:
        return self._fetch(name)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def layer_inputs(
    cfg: QwenConfig,
    fetch: Callable[[str], np.ndarray],
    ids: list[int],
) -> dict[str, np.ndarray]:
    """The input ``[tokens, K]`` of every linear layer for ``ids``, keyed as the fast graphs name them.

    ``layers.N.qkv_proj``, ``layers.N.o_proj``, ``layers.N.gate_up_proj``, ``layers.N.down_proj`` and
    ``lm_head`` (the final-norm states), in float32: about 0.6 GB for Qwen2.5-0.5B and 1150 tokens. The
    builder uses ``StreamedInputs``, the same pass on a thread of its own; this is its synchronous form.
    """
    model = ReferenceModel(cfg, _LazyWeights(fetch))
    inputs: dict[str, np.ndarray] = {}

    def keep(name: str, x: np.ndarray) -> None:
        inputs[name] = np.asarray(x, dtype=np.float32)

    model.forward(ids, capture=keep, head=False)
    return inputs


LAYER_INPUTS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")


def input_names(cfg: QwenConfig, kinds: Collection[str] | None = None) -> tuple[str, ...]:
    """The names ``layer_inputs`` keeps, in the order the reference reaches them: every linear layer's
    input and the head's (``lm_head``), or only those of ``kinds`` (``"down_proj"``, ``"lm_head"``, …)."""
    names = (*(f"layers.{i}.{m}" for i in range(cfg.num_layers) for m in LAYER_INPUTS), "lm_head")
    return names if kinds is None else tuple(n for n in names if n.rsplit(".", 1)[-1] in kinds)


class _StoppedError(Exception):
    """Raised inside the reference pass to end it early (``StreamedInputs.close``)."""


class StreamedInputs(Mapping[str, np.ndarray]):
    """``layer_inputs`` computed on a thread of its own while the caller already uses the first layers.

    ``inputs[name]`` (and ``get``) wait until the reference pass has reached ``name``; a name the pass does
    not keep (the embedding's, or a kind not in ``kinds``) is missing at once. The weight fits of layer 0
    can so start while the pass is still in layer 1: the pass and the fits share the cores instead of
    taking turns. An error in the pass is raised to whoever waits; ``close`` ends the pass early (a
    cancelled build).
    """

    def __init__(
        self,
        cfg: QwenConfig,
        fetch: Callable[[str], np.ndarray],
        ids: list[int],
        kinds: Collection[str] | None = None,
    ) -> None:
        self._names = input_names(cfg, kinds)
        self._known = frozenset(self._names)
        self._got: dict[str, np.ndarray] = {}
        self._error: BaseException | None = None
        self._ended = False
        self._stop = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(
            target=self._run, args=(cfg, fetch, ids), name="calibration", daemon=True
        )
        self._thread.start()

    def _run(self, cfg: QwenConfig, fetch: Callable[[str], np.ndarray], ids: list[int]) -> None:
        def keep(name: str, x: np.ndarray) -> None:
            if self._stop:
                raise _StoppedError
            if name not in self._known:
                return
            with self._changed:
                self._got[name] = np.asarray(x, dtype=np.float32)
                self._changed.notify_all()

        try:
            ReferenceModel(cfg, _LazyWeights(fetch)).forward(ids, capture=keep, head=False)
        except _StoppedError:
            pass
        except BaseException as exc:  # handed to the waiting fits
            self._error = exc
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._known:
            raise KeyError(name)
        with self._changed:
            while name not in self._got and not self._ended:
                self._changed.wait()
            if name in self._got:
                return self._got[name]
        if self._error is not None:
            raise self._error
        raise KeyError(name)  # the pass was closed before it got here

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def close(self) -> None:
        """End the pass at its next layer input and wait for its thread; what it kept is dropped."""
        self._stop = True
        self._thread.join()
        self._got.clear()
