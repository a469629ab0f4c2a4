"""Read a Qwen2 GGUF file (llama.cpp's format) into float32 tensors, a config and a tokenizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.convert.gguf_format import GGUFField, GGUFTensor, read_gguf
from qwen_desktop.convert.tokenizer_files import build_tokenizer_json, stop_ids_from_vocab
from qwen_desktop.convert.weights import (
    EMBED,
    FINAL_NORM,
    LM_HEAD,
    SUPPORTED_ARCHITECTURES,
    QwenConfig,
    TokenizerInfo,
    config_float,
    config_int,
)
from qwen_desktop.engine.errors import ModelError, UnsupportedModelError

_GLOBAL_NAMES = {
    "token_embd.weight": EMBED,
    "output_norm.weight": FINAL_NORM,
    "output.weight": LM_HEAD,
}
_LAYER_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
_LAYER_RE = re.compile(r"^blk\.(\d+)\.(.+)$")


def hf_name(gguf_name: str) -> str | None:
    """Map a llama.cpp tensor name to its Hugging Face name (None for tensors Qwen2 does not use)."""
    if gguf_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[gguf_name]
    m = _LAYER_RE.match(gguf_name)
    if m and m.group(2) in _LAYER_NAMES:
        return f"model.layers.{m.group(1)}.{_LAYER_NAMES[m.group(2)]}"
    return None


class GGUFSource:
    """A GGUF file opened for reading; tensors are dequantized on demand."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.description = self.path.name
        self.source_files: tuple[Path, ...] = (self.path,)
        reader = read_gguf(self.path)
        self._fields: dict[str, GGUFField] = reader.fields
        self.architecture = str(self._field("general.architecture", "unknown"))
        if self.architecture not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(
                f"{self.path.name}: architecture '{self.architecture}' is not supported "
                f"(Qwen Desktop runs {', '.join(SUPPORTED_ARCHITECTURES)} models: the Qwen2.5 family)"
            )
        self._tensors: dict[str, GGUFTensor] = {}
        for t in reader.tensors:
            name = hf_name(t.name)
            if name is not None:
                self._tensors[name] = t
        self.config = self._read_config()
        self.tokenizer = self._read_tokenizer()

    # -- metadata --------------------------------------------------------------------------------------------
    def _field(self, key: str, default: Any = None) -> Any:
        f = self._fields.get(key)
        if f is None:
            return default
        try:
            return f.contents()
        except Exception as exc:  # a field whose bytes do not decode: the file is damaged
            raise ModelError(f"{self.path.name}: metadata field {key} is unreadable ({exc})") from exc

    def _require(self, key: str) -> Any:
        value = self._field(key)
        if value is None:
            raise ModelError(f"{self.path.name}: metadata field {key} is missing")
        return value

    def _read_config(self) -> QwenConfig:
        a = self.architecture
        embed = self._tensors.get(EMBED)
        if embed is None:
            raise ModelError(f"{self.path.name}: tensor token_embd.weight is missing")
        if len(embed.shape) != 2:
            raise ModelError(f"{self.path.name}: tensor token_embd.weight is not a matrix")
        heads = self._require(f"{a}.attention.head_count")
        key_length = self._field(f"{a}.attention.key_length")
        try:
            cfg = QwenConfig(
                vocab_size=int(embed.shape[1]),  # GGML order: [hidden, vocab]
                hidden_size=config_int(self._require(f"{a}.embedding_length"), "embedding_length"),
                intermediate_size=config_int(
                    self._require(f"{a}.feed_forward_length"), "feed_forward_length"
                ),
                num_layers=config_int(self._require(f"{a}.block_count"), "block_count"),
                num_heads=config_int(heads, "attention.head_count"),
                num_kv_heads=config_int(self._field(f"{a}.attention.head_count_kv", heads), "head_count_kv"),
                rope_theta=_f32(
                    config_float(self._field(f"{a}.rope.freq_base", 1_000_000.0), "rope.freq_base")
                ),
                rms_norm_eps=_f32(
                    config_float(
                        self._field(f"{a}.attention.layer_norm_rms_epsilon", 1e-6), "layer_norm_rms_epsilon"
                    )
                ),
                max_context=config_int(self._field(f"{a}.context_length", 32768), "context_length"),
                tie_word_embeddings=LM_HEAD not in self._tensors,
            )
            cfg.validate(None if key_length is None else config_int(key_length, "attention.key_length"))
        except ModelError as exc:
            raise ModelError(f"{self.path.name}: {exc}") from None
        return cfg

    def _read_tokenizer(self) -> TokenizerInfo:
        try:
            return self._tokenizer_fields()
        except ModelError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            raise ModelError(f"{self.path.name}: the tokenizer metadata is corrupt ({_brief(exc)})") from None

    def _tokenizer_fields(self) -> TokenizerInfo:
        model = self._field("tokenizer.ggml.model")
        tokens = self._field("tokenizer.ggml.tokens")
        if model is None or tokens is None:
            raise ModelError(
                f"{self.path.name}: the file has no tokenizer (tokenizer.ggml.tokens is missing)"
            )
        if model != "gpt2":
            raise UnsupportedModelError(
                f"{self.path.name}: tokenizer type '{model}' is not supported (Qwen2 uses byte-level BPE, 'gpt2')"
            )
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise ModelError(f"{self.path.name}: tokenizer.ggml.tokens is not a list of strings")
        types = self._field("tokenizer.ggml.token_type") or [1] * len(tokens)
        if not isinstance(types, list) or len(types) != len(tokens):
            raise ModelError(f"{self.path.name}: tokenizer.ggml.token_type does not match the token list")
        merges = self._field("tokenizer.ggml.merges")
        if merges is None:
            raise ModelError(
                f"{self.path.name}: the tokenizer has no merges (tokenizer.ggml.merges is missing)"
            )
        if not isinstance(merges, list) or not all(isinstance(m, str) for m in merges):
            raise ModelError(f"{self.path.name}: tokenizer.ggml.merges is not a list of strings")
        template = self._field("tokenizer.chat_template")
        if template is not None and not isinstance(template, str):
            raise ModelError(f"{self.path.name}: tokenizer.chat_template is not text")
        text = build_tokenizer_json(
            tokens, types, merges, pre=str(self._field("tokenizer.ggml.pre", "qwen2"))
        )
        lookup = {t: i for i, t in enumerate(tokens)}
        eos = self._field("tokenizer.ggml.eos_token_id")
        stops, end_of_turn = stop_ids_from_vocab(
            lookup, None if eos is None else config_int(eos, "eos_token_id")
        )
        specials = {t: i for i, (t, k) in enumerate(zip(tokens, types, strict=True)) if k in (3, 4)}
        bos = self._field("tokenizer.ggml.bos_token_id")
        pad = self._field("tokenizer.ggml.padding_token_id")
        return TokenizerInfo(
            tokenizer_json=text,
            chat_template=template,
            eos_token_ids=stops,
            end_of_turn_id=end_of_turn,
            bos_token_id=None if bos is None else config_int(bos, "bos_token_id"),
            pad_token_id=None if pad is None else config_int(pad, "padding_token_id"),
            special_tokens=specials,
        )

    # -- tensors ---------------------------------------------------------------------------------------------
    def tensor_names(self) -> list[str]:
        return list(self._tensors)

    def tensor_info(self, name: str) -> tuple[tuple[int, ...], str]:
        t = self._tensors[name]
        shape = tuple(int(d) for d in reversed(t.shape))  # GGML lists the fastest dimension first
        kind = t.tensor_type.name
        if kind in ("F32", "F16", "BF16", "F64"):
            return shape, "float"
        if kind.startswith("I") and kind[1:].isdigit():  # I8 ... I64: integers, not weights
            return shape, kind
        return shape, "quantized"

    def tensor(self, name: str) -> np.ndarray:
        t = self._tensors.get(name)
        if t is None:
            raise ModelError(f"{self.path.name}: tensor {name} is missing")
        try:
            arr = _dequantize(t.data, t.tensor_type)
        except NotImplementedError as exc:
            raise UnsupportedModelError(
                f"{self.path.name}: tensor {t.name} uses type {t.tensor_type.name}, which cannot be read"
            ) from exc
        except Exception as exc:
            raise ModelError(f"{self.path.name}: tensor {t.name} is corrupt ({exc})") from exc
        shape = tuple(int(d) for d in reversed(t.shape))  # GGML lists the fastest dimension first
        try:
            arr = np.ascontiguousarray(arr.reshape(shape), dtype=np.float32)
        except ValueError as exc:
            raise ModelError(f"{self.path.name}: tensor {t.name} is truncated or corrupt") from exc
        if not np.isfinite(arr).all():
            raise ModelError(
                f"{self.path.name}: tensor {t.name} contains NaN or infinite values (corrupt file?)"
            )
        return arr

    def close(self) -> None:
        # The tensors are views of the file's memory map; dropping the references lets the OS unmap it.
        self._tensors.clear()
        self._fields = {}


# Rows dequantized per call: gguf's own loop takes 16 rows at a time, and for a 151936-row embedding the
# Python around each call costs more than the arithmetic. The values are the same (each row on its own).
_DEQUANT_VALUES = 1 << 22


def _dequantize(data: np.ndarray, qtype: Any) -> np.ndarray:
    """``gguf.quants.dequantize`` in large row chunks; the same floats, bit for bit."""
    from gguf import quants

    kind: Any = getattr(quants, getattr(qtype, "name", ""), None)  # Q8_0, Q5_0, Q4_K ... classes
    rows_of = getattr(kind, "dequantize_rows", None)
    per_block = getattr(kind, "block_size", 0)
    type_size = getattr(kind, "type_size", 0)
    if rows_of is None or not per_block or not type_size or data.ndim != 2 or data.shape[1] % type_size:
        return np.asarray(quants.dequantize(data, qtype))
    kind.init_grid()
    width = data.shape[1] // type_size * per_block  # values per row
    out = np.empty((data.shape[0], width), np.float32)
    step = max(1, _DEQUANT_VALUES // width)
    for start in range(0, data.shape[0], step):
        out[start : start + step] = rows_of(data[start : start + step]).reshape(-1, width)
    return out


def _brief(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _f32(value: Any) -> float:
    """A float32 metadata value as the decimal it was written from (9.99999997e-07 -> 1e-06)."""
    return float(str(np.float32(value)))
