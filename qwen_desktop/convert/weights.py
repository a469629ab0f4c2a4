"""The in-memory description of a Qwen2 checkpoint, whatever file format it came from.

Tensors use the Hugging Face names and layouts (``model.layers.0.self_attn.q_proj.weight`` is
``[out_features, in_features]``); readers translate their own naming into these.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from qwen_desktop.engine.errors import ModelError

SUPPORTED_ARCHITECTURES = ("qwen2",)

# What a config may say (inclusive). Generous for the Qwen2.5 family (the 72B model has 80 layers, 64 heads,
# hidden 8192, intermediate 29568, vocabulary 152064, context 131072); anything outside is a broken file.
MAX_CONTEXT = 131_072
MAX_HEAD_DIM = 1024
CONFIG_RANGES: dict[str, tuple[int, int]] = {
    "max_context": (1, MAX_CONTEXT),
    "vocab_size": (1, 1 << 20),
    "hidden_size": (2, 65_536),
    "intermediate_size": (1, 262_144),
    "num_layers": (1, 1024),
    "num_heads": (1, 1024),
    "num_kv_heads": (1, 1024),
}
FLOAT_RANGES: dict[str, tuple[float, float]] = {"rope_theta": (0.0, 1e12), "rms_norm_eps": (0.0, 1.0)}


@dataclass(frozen=True)
class QwenConfig:
    """Dimensions and constants of a Qwen2 decoder."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    rope_theta: float = 1_000_000.0
    rms_norm_eps: float = 1e-6
    max_context: int = 32768
    tie_word_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    def validate(self, declared_head_dim: int | None = None) -> None:
        """Refuse numbers that no Qwen2 model has, before anything is allocated from them (a context of 2**40
        would ask for terabytes of rotary tables, a context of 0 builds a model that answers nothing).

        ``declared_head_dim``: the head size the file states, when it states one (it must match
        ``hidden_size / num_heads``). The ranges are in docs/models.md, "Limits".
        """
        for name, (low, high) in CONFIG_RANGES.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ModelError(
                    f"config value {name} is {value!r}; it must be a whole number from {low} to {high:,}"
                )
        if self.hidden_size % self.num_heads:
            raise ModelError(f"hidden size {self.hidden_size} is not a multiple of {self.num_heads} heads")
        if self.num_heads % self.num_kv_heads:
            raise ModelError(
                f"{self.num_heads} heads cannot be grouped over {self.num_kv_heads} key/value heads"
            )
        if self.head_dim % 2:
            raise ModelError(f"head size {self.head_dim} is odd; rotary embeddings need an even size")
        if self.head_dim > MAX_HEAD_DIM:
            raise ModelError(f"head size {self.head_dim} is larger than {MAX_HEAD_DIM}")
        if declared_head_dim is not None and declared_head_dim != self.head_dim:
            raise ModelError(
                f"head size {declared_head_dim} does not match hidden size {self.hidden_size} / "
                f"{self.num_heads} heads = {self.head_dim}"
            )
        for name, (flow, fhigh) in FLOAT_RANGES.items():
            value = getattr(self, name)
            if not isinstance(value, float | int) or not math.isfinite(value) or not flow < value <= fhigh:
                raise ModelError(
                    f"config value {name} is {value!r}; it must be a number above {flow} and at most {fhigh:g}"
                )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TokenizerInfo:
    """What the engine needs besides the weights: the tokenizer and how chats are written."""

    tokenizer_json: str
    chat_template: str | None
    eos_token_ids: tuple[int, ...]
    end_of_turn_id: int | None
    bos_token_id: int | None = None
    pad_token_id: int | None = None
    special_tokens: dict[str, int] = field(default_factory=dict)


class WeightSource(Protocol):
    """A checkpoint that hands out float32 tensors one at a time, so a large model never sits in memory twice."""

    architecture: str
    config: QwenConfig
    tokenizer: TokenizerInfo
    source_files: tuple[Path, ...]
    description: str

    def tensor_names(self) -> list[str]: ...

    def tensor_info(self, name: str) -> tuple[tuple[int, ...], str]:
        """Shape (Hugging Face order) and kind of a tensor, from the file's header alone: ``float``,
        ``quantized``, or the name of a type that is not weights (``I32``)."""
        ...

    def tensor(self, name: str) -> np.ndarray: ...

    def close(self) -> None: ...


def layer_names(i: int) -> dict[str, str]:
    """Hugging Face names of the tensors of decoder layer ``i``."""
    p = f"model.layers.{i}."
    return {
        "input_norm": p + "input_layernorm.weight",
        "q": p + "self_attn.q_proj.weight",
        "q_bias": p + "self_attn.q_proj.bias",
        "k": p + "self_attn.k_proj.weight",
        "k_bias": p + "self_attn.k_proj.bias",
        "v": p + "self_attn.v_proj.weight",
        "v_bias": p + "self_attn.v_proj.bias",
        "o": p + "self_attn.o_proj.weight",
        "post_norm": p + "post_attention_layernorm.weight",
        "gate": p + "mlp.gate_proj.weight",
        "up": p + "mlp.up_proj.weight",
        "down": p + "mlp.down_proj.weight",
    }


EMBED = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"
LM_HEAD = "lm_head.weight"


def expected_shapes(cfg: QwenConfig) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Every tensor a Qwen2 checkpoint must have, with its shape (``lm_head`` only when untied)."""
    h, kv = cfg.hidden_size, cfg.num_kv_heads * cfg.head_dim
    yield EMBED, (cfg.vocab_size, h)
    yield FINAL_NORM, (h,)
    if not cfg.tie_word_embeddings:
        yield LM_HEAD, (cfg.vocab_size, h)
    for i in range(cfg.num_layers):
        n = layer_names(i)
        yield n["input_norm"], (h,)
        yield n["q"], (h, h)
        yield n["q_bias"], (h,)
        yield n["k"], (kv, h)
        yield n["k_bias"], (kv,)
        yield n["v"], (kv, h)
        yield n["v_bias"], (kv,)
        yield n["o"], (h, h)
        yield n["post_norm"], (h,)
        yield n["gate"], (cfg.intermediate_size, h)
        yield n["up"], (cfg.intermediate_size, h)
        yield n["down"], (h, cfg.intermediate_size)


WEIGHT_KINDS = ("float", "quantized")


def config_int(value: Any, name: str) -> int:
    """A whole number from a model file's settings (an integral float such as 32768.0 is accepted)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ModelError(f"config value {name} is {_short(value)}; expected a whole number")


def config_float(value: Any, name: str) -> float:
    """A number from a model file's settings."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ModelError(f"config value {name} is {_short(value)}; expected a number")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_tensors(source: WeightSource) -> None:
    """Fail with a clear message when a tensor is missing, or its shape or type disagrees with the config,
    before any slow work starts (a mismatch would otherwise build, install, and fail when loaded)."""
    names = set(source.tensor_names())
    for name, shape in expected_shapes(source.config):
        if name not in names:
            raise ModelError(f"{source.description}: tensor {name} is missing")
        found, kind = source.tensor_info(name)
        if found != shape:
            raise ModelError(
                f"{source.description}: tensor {name} has shape {list(found)}, but the model's settings "
                f"need {list(shape)} (the file's metadata and weights disagree)"
            )
        if kind not in WEIGHT_KINDS:
            raise ModelError(
                f"{source.description}: tensor {name} has type {kind}, not floating-point weights"
            )


def load_all(source: WeightSource) -> dict[str, np.ndarray]:
    """Read every tensor (tests and the numpy reference use this; the builder streams instead)."""
    out: dict[str, np.ndarray] = {}
    for name, shape in expected_shapes(source.config):
        arr = source.tensor(name)
        if arr.shape != shape:
            raise ModelError(f"{source.description}: tensor {name} has shape {arr.shape}, expected {shape}")
        out[name] = arr
    if source.config.tie_word_embeddings:
        out[LM_HEAD] = out[EMBED]
    return out
