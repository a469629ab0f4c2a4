"""Tiny random Qwen2 models with a real (small) byte-level BPE tokenizer.

Tests, the frozen-app smoke test and ``qwen-desktop make-tiny-model`` use them: they build in well under a
second and exercise every code path of the real thing (GGUF and safetensors readers, both graph styles, the
chat template, special tokens, multi-byte characters).
"""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.convert.tokenizer_files import (
    TOKEN_CONTROL,
    TOKEN_NORMAL,
    TOKEN_UNUSED,
    TOKEN_USER_DEFINED,
    build_tokenizer_json,
)
from qwen_desktop.convert.weights import LM_HEAD, QwenConfig, expected_shapes

CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

SPECIAL_TOKENS = [
    ("<|endoftext|>", TOKEN_CONTROL),
    ("<|im_start|>", TOKEN_CONTROL),
    ("<|im_end|>", TOKEN_CONTROL),
    ("<tool_call>", TOKEN_USER_DEFINED),
    ("</tool_call>", TOKEN_USER_DEFINED),
    ("<|fim_prefix|>", TOKEN_CONTROL),
]
UNUSED_PADDING = 4  # rows of the embedding that no text maps to, as in real Qwen files ([PAD151665] ...)

_CORPUS = [
    "Hello, how are you today? I am fine, thank you.",
    "The quick brown fox jumps over the lazy dog.",
    "def reverse(s):\n    return s[::-1]\n",
    "print('hello world')\nfor i in range(10):\n    print(i)\n",
    "你好，世界！我们今天在这里讨论语言模型。",
    "今天天气很好，我们去公园散步吧。",
    "Emoji: 😀 🎉 🚀 and accents: café naïve résumé",
    "A tiny model says things at random, but its tokenizer is real.",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "```python\nimport numpy as np\nx = np.zeros(3)\n```",
]

TINY_CONFIG = QwenConfig(
    vocab_size=0,  # set from the tokenizer
    hidden_size=64,
    intermediate_size=128,
    num_layers=2,
    num_heads=4,
    num_kv_heads=2,
    rope_theta=10000.0,
    rms_norm_eps=1e-6,
    max_context=512,
    tie_word_embeddings=False,
)


def make_tokenizer(vocab_size: int = 320) -> tuple[list[str], list[int], list[str]]:
    """Train a small byte-level BPE with Qwen2's pre-tokenizer. Returns (tokens, token types, merges)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from qwen_desktop.convert.tokenizer_files import QWEN2_SPLIT_PATTERN

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(pattern=Regex(QWEN2_SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        min_frequency=1,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    trained = json.loads(tok.to_str())
    vocab: dict[str, int] = trained["model"]["vocab"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in trained["model"]["merges"]]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    types = [TOKEN_NORMAL] * len(tokens)
    for text, kind in SPECIAL_TOKENS:
        tokens.append(text)
        types.append(kind)
    for _ in range(UNUSED_PADDING):
        tokens.append(f"[PAD{len(tokens)}]")
        types.append(TOKEN_UNUSED)
    return tokens, types, merges


def make_weights(cfg: QwenConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Random weights with enough spread that the next token is clearly decided (useful for greedy tests)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, shape in expected_shapes(cfg):
        if name.endswith("norm.weight"):
            arr = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name.endswith("bias"):
            arr = 0.1 * rng.standard_normal(shape)
        else:
            arr = rng.standard_normal(shape) / np.sqrt(shape[-1]) * (2.0 if name == LM_HEAD else 1.0)
        out[name] = arr.astype(np.float32)
    return out


def tiny_config(vocab_size: int, **overrides: Any) -> QwenConfig:
    return replace(TINY_CONFIG, vocab_size=vocab_size, **overrides)


_HF_TO_GGUF = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf: str) -> str:
    if hf in _HF_TO_GGUF:
        return _HF_TO_GGUF[hf]
    _, _, layer, rest = hf.split(".", 3)
    return f"blk.{layer}.{_HF_TO_GGUF[rest]}"


def write_gguf(
    path: Path,
    cfg: QwenConfig,
    weights: dict[str, np.ndarray],
    tokenizer: tuple[list[str], list[int], list[str]],
    matrix_type: str = "F32",
    architecture: str = "qwen2",
    chat_template: str | None = CHATML_TEMPLATE,
    with_tokenizer: bool = True,
    raw: dict[str, tuple[np.ndarray, Any]] | None = None,
) -> Path:
    """Write ``weights`` as a GGUF file; 2-D weights use ``matrix_type`` (F32, F16, BF16, Q8_0, Q5_0, Q4_0).

    ``raw`` maps a tensor name to (already encoded bytes, GGML type) for types the gguf package cannot
    encode itself (the K-quants).
    """
    import gguf
    from gguf import GGMLQuantizationType as T

    qtype = T[matrix_type]
    w = gguf.GGUFWriter(str(path), architecture)
    w.add_name("tiny qwen2 test model")
    w.add_block_count(cfg.num_layers)
    w.add_context_length(cfg.max_context)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_heads)
    w.add_head_count_kv(cfg.num_kv_heads)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    if with_tokenizer:
        tokens, types, merges = tokenizer
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_eos_token_id(tokens.index("<|endoftext|>"))
        w.add_pad_token_id(tokens.index("<|endoftext|>"))
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_add_bos_token(False)
        if chat_template:
            w.add_chat_template(chat_template)
    for name, arr in weights.items():
        if name == LM_HEAD and cfg.tie_word_embeddings:
            continue
        if raw and name in raw:
            data, kind = raw[name]
            w.add_tensor(gguf_name(name), data, raw_dtype=kind)
        elif arr.ndim == 2 and qtype != T.F32:
            data = gguf.quants.quantize(arr, qtype)
            w.add_tensor(gguf_name(name), data, raw_dtype=qtype)
        else:
            w.add_tensor(gguf_name(name), arr.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str = "F32") -> None:
    """Write tensors in the safetensors layout (F32, F16 or BF16)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs = []
    offset = 0
    for name, arr in tensors.items():
        a32 = np.ascontiguousarray(arr, dtype=np.float32)
        if dtype == "F32":
            blob = a32.tobytes()
        elif dtype == "F16":
            blob = a32.astype("<f2").tobytes()
        elif dtype == "BF16":
            blob = (a32.view(np.uint32) >> 16).astype("<u2").tobytes()  # truncation is fine for tests
        else:
            raise ValueError(dtype)
        header[name] = {
            "dtype": dtype,
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(head)))
        fh.write(head)
        for b in blobs:
            fh.write(b)


def write_hf_folder(
    folder: Path,
    cfg: QwenConfig,
    weights: dict[str, np.ndarray],
    tokenizer: tuple[list[str], list[int], list[str]],
    dtype: str = "F32",
    shards: int = 1,
) -> Path:
    """Write a Hugging Face style folder: config.json, safetensors (optionally sharded), tokenizer files."""
    folder.mkdir(parents=True, exist_ok=True)
    tokens, types, merges = tokenizer
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_layers,
        "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads,
        "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.rms_norm_eps,
        "max_position_embeddings": cfg.max_context,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "eos_token_id": tokens.index("<|endoftext|>"),
        "bos_token_id": tokens.index("<|endoftext|>"),
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    names = [n for n in weights if not (n == LM_HEAD and cfg.tie_word_embeddings)]
    if shards == 1:
        write_safetensors(folder / "model.safetensors", {n: weights[n] for n in names}, dtype)
    else:
        weight_map = {}
        parts = np.array_split(np.arange(len(names)), shards)
        for s, idx in enumerate(parts):
            fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            write_safetensors(folder / fname, {names[i]: weights[names[i]] for i in idx}, dtype)
            weight_map.update({names[i]: fname for i in idx})
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map}), encoding="utf-8"
        )
    (folder / "tokenizer.json").write_text(build_tokenizer_json(tokens, types, merges), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": CHATML_TEMPLATE, "eos_token": "<|im_end|>"}), encoding="utf-8"
    )
    return folder


def make_tiny_source(out: Path, fmt: str = "gguf", seed: int = 0, **cfg_overrides: Any) -> Path:
    """Write a complete tiny model as ``out`` (a .gguf file or an HF folder) and return its path."""
    tokenizer = make_tokenizer()
    cfg = tiny_config(len(tokenizer[0]), **cfg_overrides)
    weights = make_weights(cfg, seed)
    if fmt == "gguf":
        return write_gguf(out, cfg, weights, tokenizer)
    return write_hf_folder(out, cfg, weights, tokenizer)
