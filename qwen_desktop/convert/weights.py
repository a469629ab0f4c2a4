"""The in-memory description of a Qwen2 checkpoint, whatever file format it came from.

Tensors use the Hugging Face names and layouts (``model.layers.0.self_attn.q_proj.weight`` is
``[out_features, in_features]``); readers translate their own naming into these.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from qwen_desktop.engine.errors import ModelError

SUPPORTED_ARCHITECTURES = ("qwen2",)


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

    def validate(self) -> None:
        """Refuse dimensions that no Qwen2 model has (they would build a graph that fails later)."""
        if self.hidden_size % self.num_heads:
            raise ModelError(f"hidden size {self.hidden_size} is not a multiple of {self.num_heads} heads")
        if self.num_heads % self.num_kv_heads:
            raise ModelError(
                f"{self.num_heads} heads cannot be grouped over {self.num_kv_heads} key/value heads"
            )
        if self.head_dim % 2:
            raise ModelError(f"head size {self.head_dim} is odd; rotary embeddings need an even size")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads"):
            if getattr(self, name) <= 0:
                raise ModelError(f"config value {name} must be positive")

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


def check_tensors(source: WeightSource) -> None:
    """Fail with a clear message when a tensor is missing, before any slow work starts."""
    names = set(source.tensor_names())
    for name, _shape in expected_shapes(source.config):
        if name not in names:
            raise ModelError(f"{source.description}: tensor {name} is missing")


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
