"""Model files whose settings, shapes or headers lie get one clear line from `qwen-desktop build-model` and
`import`, before anything is allocated from them (issue 25 defects 4, 7 and 8)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from qwen_desktop.cli import main
from qwen_desktop.convert.tiny import write_gguf
from tests.convert.hostile import hf_copy, safetensors_parts, write_safetensors_raw
from tests.convert.test_bad_input import assert_nothing_left, build

# -- defect 4: every config number is range-checked in one place ---------------------------------------------


@pytest.mark.parametrize("context", [2**32 - 1, 0])
def test_gguf_context_length_out_of_range(tmp_path, capsys, tiny_cfg, tiny_weights, tiny_tokenizer, context):
    g = write_gguf(
        tmp_path / "ctx.gguf", replace(tiny_cfg, max_context=context), tiny_weights, tiny_tokenizer
    )
    code, msg = build(capsys, g, tmp_path / "out")
    assert code == 1 and "ctx.gguf: config value max_context" in msg and "1 to 131,072" in msg
    assert_nothing_left(tmp_path / "out")


BAD_CONFIGS = {
    "context 2**40": ({"max_position_embeddings": 2**40}, "max_context"),
    "context 0": ({"max_position_embeddings": 0}, "max_context"),
    "no heads": ({"num_attention_heads": 0}, "num_heads"),
    "kv heads do not divide": ({"num_key_value_heads": 3}, "cannot be grouped"),
    "no kv heads": ({"num_key_value_heads": 0}, "num_kv_heads"),
    "head dim disagrees": ({"head_dim": 32}, "head size 32 does not match"),
    "no layers": ({"num_hidden_layers": 0}, "num_layers"),
    "no vocabulary": ({"vocab_size": 0}, "vocab_size"),
    "hidden size text": ({"hidden_size": "64"}, "expected a whole number"),
    "hidden size huge": ({"hidden_size": 10**30}, "hidden_size"),
    "layers fractional": ({"num_hidden_layers": 2.5}, "expected a whole number"),
    "rope theta NaN": ({"rope_theta": float("nan")}, "rope_theta"),
    "rope theta negative": ({"rope_theta": -1.0}, "rope_theta"),
    "eps infinite": ({"rms_norm_eps": float("inf")}, "rms_norm_eps"),
    "eps zero": ({"rms_norm_eps": 0}, "rms_norm_eps"),
    "heads not a number": ({"num_attention_heads": [4]}, "expected a whole number"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_hf_config_out_of_range(tmp_path, capsys, tiny_hf, case):
    change, words = BAD_CONFIGS[case]
    folder = hf_copy(tiny_hf, tmp_path / "m", change)
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1 and msg.startswith("qwen-desktop: error: m: ") and words in msg
    assert_nothing_left(tmp_path / "out")


def test_import_refuses_a_huge_context_and_installs_nothing(tmp_path, capsys, tiny_hf):
    folder = hf_copy(tiny_hf, tmp_path / "m", {"max_position_embeddings": 2**40})
    models = tmp_path / "models"
    code = main(["import", str(folder), "--dir", str(models)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and "max_context" in err
    assert not models.exists() or not [p for p in models.iterdir() if not p.name.startswith(".")]


# -- defect 7: shapes (and types) are checked against the config before building ------------------------------


@pytest.mark.parametrize(
    "change, tensor",
    [
        ({"intermediate_size": 256}, "mlp.gate_proj.weight"),
        ({"num_kv_heads": 4}, "self_attn.k_proj.weight"),
    ],
)
def test_gguf_metadata_that_disagrees_with_its_shapes(
    tmp_path, capsys, tiny_cfg, tiny_weights, tiny_tokenizer, change, tensor
):
    g = write_gguf(tmp_path / "liar.gguf", replace(tiny_cfg, **change), tiny_weights, tiny_tokenizer)
    code, msg = build(capsys, g, tmp_path / "out")
    assert code == 1 and f"liar.gguf: tensor model.layers.0.{tensor} has shape" in msg and "disagree" in msg
    assert_nothing_left(tmp_path / "out")


def test_hf_config_that_disagrees_with_its_shapes(tmp_path, capsys, tiny_hf):
    folder = hf_copy(tiny_hf, tmp_path / "m", {"intermediate_size": 96})
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1 and "has shape [128, 64], but the model's settings need [96, 64]" in msg


def test_integer_tensor_is_not_weights(tmp_path, capsys, tiny_hf):
    folder = hf_copy(tiny_hf, tmp_path / "m")
    header, data = safetensors_parts(folder / "model.safetensors")
    header["model.norm.weight"]["dtype"] = "I32"
    write_safetensors_raw(folder / "model.safetensors", header, data)
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1 and "tensor model.norm.weight has type I32, not floating-point weights" in msg


# -- defect 8: lying safetensors headers ----------------------------------------------------------------------

NORM = "model.norm.weight"


def _lie(header, data, how):
    e = header[NORM]
    begin, end = e["data_offsets"]
    if how == "list header":
        return list(header.values()), data, None
    if how == "entry not a table":
        header[NORM] = "F32"
    elif how == "negative dim":
        e["shape"] = [-64]
    elif how == "string shape":
        e["shape"] = "64"
    elif how == "string dims":
        e["shape"] = ["64"]
    elif how == "offsets past the end":
        e["data_offsets"] = [len(data) - 4, len(data) + 252]
    elif how == "negative offsets":
        e["data_offsets"] = [-256, 0]
    elif how == "reversed offsets":
        e["data_offsets"] = [end, begin]
    elif how == "overlapping offsets":
        other = next(n for n in header if n != NORM and n != "__metadata__" and header[n]["shape"] == [64])
        e["data_offsets"] = header[other]["data_offsets"]
    elif how == "one offset":
        e["data_offsets"] = [begin]
    elif how == "wrong byte count":
        e["shape"] = [65]
    elif how == "no dtype":
        del e["dtype"]
    elif how == "huge header length":
        return header, data, 2**63
    elif how == "deeply nested header":
        return b"[" * 100_000 + b"]" * 100_000, data, None
    return header, data, None


LIES = [
    "list header",
    "entry not a table",
    "negative dim",
    "string shape",
    "string dims",
    "offsets past the end",
    "negative offsets",
    "reversed offsets",
    "overlapping offsets",
    "one offset",
    "wrong byte count",
    "no dtype",
    "huge header length",
    "deeply nested header",
]


@pytest.mark.parametrize("how", LIES)
def test_lying_safetensors_header(tmp_path, capsys, tiny_hf, how):
    folder = hf_copy(tiny_hf, tmp_path / "m")
    header, data = safetensors_parts(folder / "model.safetensors")
    header, data, length = _lie(header, data, how)
    write_safetensors_raw(folder / "model.safetensors", header, data, length)
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1 and msg.startswith("qwen-desktop: error: model.safetensors: ")
    assert_nothing_left(tmp_path / "out")


def test_index_that_points_outside_the_folder(tmp_path, capsys, tiny_hf):
    folder = hf_copy(tiny_hf, tmp_path / "m")
    (folder / "model.safetensors").rename(tmp_path / "elsewhere.safetensors")
    index = {"weight_map": {NORM: "../elsewhere.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1 and "outside the folder" in msg
