"""GGUF and Hugging Face readers give the same float32 tensors, config and tokenizer."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants

from qwen_desktop.convert.builder import open_source
from qwen_desktop.convert.gguf_reader import GGUFSource, hf_name
from qwen_desktop.convert.tiny import write_gguf, write_hf_folder
from qwen_desktop.convert.weights import EMBED, LM_HEAD, load_all


def test_gguf_and_hf_folders_read_the_same_model(tiny_gguf, tiny_hf, tiny_weights):
    a, b = open_source(tiny_gguf), open_source(tiny_hf)
    assert a.config == b.config
    wa, wb = load_all(a), load_all(b)
    for name, want in tiny_weights.items():
        np.testing.assert_array_equal(wa[name], want)
        np.testing.assert_array_equal(wb[name], want)
    assert a.tokenizer.eos_token_ids == b.tokenizer.eos_token_ids
    assert a.tokenizer.chat_template == b.tokenizer.chat_template


@pytest.mark.parametrize("kind", ["F16", "BF16", "Q8_0", "Q5_0", "Q4_0"])
def test_gguf_quantized_tensor_types_dequantize_close_to_the_original(
    tmp_path, tiny_cfg, tiny_weights, tiny_tokenizer, kind
):
    path = write_gguf(tmp_path / f"{kind}.gguf", tiny_cfg, tiny_weights, tiny_tokenizer, matrix_type=kind)
    got = load_all(GGUFSource(path))
    tolerance = {"F16": 1e-3, "BF16": 1e-2, "Q8_0": 0.02, "Q5_0": 0.1, "Q4_0": 0.2}[kind]
    for name, want in tiny_weights.items():
        scale = np.abs(want).max()
        assert np.abs(got[name] - want).max() <= tolerance * scale * 2, name


def _k_quant_bytes(rows: int, cols: int, qtype: T, seed: int) -> np.ndarray:
    """Random but well-formed K-quant blocks (small finite f16 super-block scales, random codes)."""
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.001).tobytes(), np.uint8)
    if qtype in (T.Q4_K, T.Q5_K):  # d and dmin lead the block
        raw[..., 0:2] = scale
        raw[..., 2:4] = scale
    elif qtype == T.Q6_K:  # d ends the block
        raw[..., -2:] = scale
    return raw.reshape(rows, -1)


@pytest.mark.parametrize("kind", [T.Q4_K, T.Q5_K, T.Q6_K])
def test_gguf_k_quant_types_are_read(tmp_path, tiny_tokenizer, kind):
    from qwen_desktop.convert.tiny import make_weights, tiny_config

    cfg = tiny_config(
        len(tiny_tokenizer[0]), hidden_size=256, intermediate_size=256, num_heads=4, num_kv_heads=2
    )
    weights = make_weights(cfg)
    raw, expected = {}, {}
    for name, arr in weights.items():
        if name.endswith("down_proj.weight"):
            data = _k_quant_bytes(arr.shape[0], arr.shape[1], kind, seed=len(name))
            raw[name] = (data, kind)
            expected[name] = quants.dequantize(data, kind).reshape(arr.shape)
    path = write_gguf(tmp_path / "k.gguf", cfg, weights, tiny_tokenizer, raw=raw)
    src = GGUFSource(path)
    assert expected
    for name, want in expected.items():
        got = src.tensor(name)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert np.abs(got).max() > 0


@pytest.mark.parametrize("dtype", ["F16", "BF16"])
def test_hf_half_precision_and_sharded_folders(tmp_path, tiny_cfg, tiny_weights, tiny_tokenizer, dtype):
    folder = write_hf_folder(tmp_path / "m", tiny_cfg, tiny_weights, tiny_tokenizer, dtype=dtype, shards=3)
    assert len(list(folder.glob("*.safetensors"))) == 3
    got = load_all(open_source(folder))
    for name, want in tiny_weights.items():
        assert np.abs(got[name] - want).max() <= 0.01 * np.abs(want).max() + 1e-6, name


def test_gguf_special_tokens_stay_single_tokens(tiny_gguf):
    from tokenizers import Tokenizer

    src = GGUFSource(tiny_gguf)
    tok = Tokenizer.from_str(src.tokenizer.tokenizer_json)
    specials = src.tokenizer.special_tokens
    for text in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "<|fim_prefix|>"):
        assert tok.encode(f"hi {text} there", add_special_tokens=False).ids.count(specials[text]) == 1
    assert src.tokenizer.end_of_turn_id == specials["<|im_end|>"]
    assert src.tokenizer.eos_token_ids[:2] == (specials["<|im_end|>"], specials["<|endoftext|>"])


def test_tokenizer_round_trips_chinese_and_emoji(tiny_gguf):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(GGUFSource(tiny_gguf).tokenizer.tokenizer_json)
    text = "你好，世界！😀 café\n  code()"
    assert tok.decode(tok.encode(text, add_special_tokens=False).ids) == text


def test_gguf_names_map_to_hugging_face_names():
    assert hf_name("token_embd.weight") == EMBED
    assert hf_name("output.weight") == LM_HEAD
    assert hf_name("blk.3.attn_q.bias") == "model.layers.3.self_attn.q_proj.bias"
    assert hf_name("blk.0.ffn_down.weight") == "model.layers.0.mlp.down_proj.weight"
    assert hf_name("rope_freqs.weight") is None


@pytest.mark.parametrize("kind", [T.Q8_0, T.Q5_0, T.Q4_0, T.Q5_1, T.BF16, T.Q4_K, T.Q6_K])
def test_gguf_tensors_dequantize_in_chunks_to_exactly_what_gguf_gives(monkeypatch, kind):
    """The reader dequantizes many rows per call (gguf's own loop takes 16); the floats must not change,
    also where a chunk ends mid-tensor."""
    from qwen_desktop.convert import gguf_reader

    monkeypatch.setattr(gguf_reader, "_DEQUANT_VALUES", 3 * 256 + 7)  # chunks of 3 rows of 256 values
    rng = np.random.default_rng(int(kind))
    if kind in (T.Q4_K, T.Q6_K):
        data = _k_quant_bytes(37, 256, kind, seed=int(kind))
    else:
        data = quants.quantize(rng.standard_normal((37, 256)).astype(np.float32), kind)
    want = np.asarray(quants.dequantize(data, kind), np.float32).reshape(37, 256)
    got = gguf_reader._dequantize(data, kind)
    assert got.shape == (37, 256) and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
