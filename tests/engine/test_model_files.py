"""What a model folder holds, read before any session opens: the builder's manifest layout and a hub ONNX
export (``config.json`` + ``onnx/model*.onnx``); a folder that lacks a part says which, in one line."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.model_files import (
    HUB_GRAPH_CANDIDATES,
    load_model_files,
    model_display_name,
    pretty_model_name,
)


def test_a_built_folder_lists_its_three_graphs_and_its_numbers(tiny_model_dir):
    files = load_model_files(tiny_model_dir)
    manifest = json.loads((tiny_model_dir / "manifest.json").read_text())
    assert files.style == "fast" and files.kv_layout == "views"
    assert files.graph == tiny_model_dir / "model.onnx"
    assert files.prefill_graph == tiny_model_dir / "prefill.onnx"
    assert files.head_graph == tiny_model_dir / "head.onnx"
    assert files.tokenizer == tiny_model_dir / "tokenizer.json"
    assert files.num_layers == manifest["config"]["num_layers"]
    assert files.vocab_size == manifest["config"]["vocab_size"]
    assert files.stop_ids == tuple(manifest["eos_token_ids"])
    assert files.max_context == manifest["max_context"]


def test_a_deleted_prefill_graph_is_optional_but_a_deleted_head_or_tokenizer_is_not(tmp_path, tiny_model_dir):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "prefill.onnx").unlink()
    assert load_model_files(folder).prefill_graph is None  # everything runs on model.onnx
    (folder / "head.onnx").unlink()
    with pytest.raises(ModelError, match=r"head\.onnx is missing"):
        load_model_files(folder)
    shutil.copy(tiny_model_dir / "head.onnx", folder / "head.onnx")
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json is missing"):
        load_model_files(folder)


def test_an_unknown_kv_layout_asks_for_an_update(tmp_path, tiny_model_dir):
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["kv_layout"] = "from-the-future"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelError, match="unknown KV cache layout 'from-the-future'; please update"):
        load_model_files(folder)


def hub_export(tmp_path, tiny_plain_dir, graph="onnx/model_q4.onnx", **config):
    """A folder laid out as a hub ONNX export, from the tiny model's plain-style build."""
    folder = tmp_path / "hub"
    (folder / graph).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(tiny_plain_dir / "model.onnx", folder / graph)
    shutil.copy(tiny_plain_dir / "tokenizer.json", folder / "tokenizer.json")
    m = json.loads((tiny_plain_dir / "manifest.json").read_text())["config"]
    cfg = {
        "model_type": "qwen2",
        "num_hidden_layers": m["num_layers"],
        "num_attention_heads": m["num_heads"],
        "num_key_value_heads": m["num_kv_heads"],
        "hidden_size": m["hidden_size"],
        "vocab_size": m["vocab_size"],
        "max_position_embeddings": 512,
        "eos_token_id": 3,
    } | config
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    return folder


@pytest.mark.parametrize("graph", ["onnx/model_q4.onnx", "onnx/model.onnx", "model.onnx"])
def test_a_hub_export_is_read_from_its_config_and_the_first_graph_found(tmp_path, tiny_plain_dir, graph):
    folder = hub_export(tmp_path, tiny_plain_dir, graph)
    files = load_model_files(folder)
    assert files.style == "plain" and files.graph == folder / graph
    assert files.max_context == 512 and files.chat_template == "{{ messages }}"
    assert 3 in files.stop_ids
    assert files.name == "hub"


def test_a_hub_export_prefers_the_first_candidate_graph(tmp_path, tiny_plain_dir):
    folder = hub_export(tmp_path, tiny_plain_dir, "onnx/model.onnx")
    shutil.copy(folder / "onnx/model.onnx", folder / "onnx/model_q4.onnx")
    assert HUB_GRAPH_CANDIDATES.index("onnx/model_q4.onnx") < HUB_GRAPH_CANDIDATES.index("onnx/model.onnx")
    assert load_model_files(folder).graph == folder / "onnx/model_q4.onnx"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "llama"}, "architecture 'llama' is not supported"),
        ({"num_attention_heads": None}, "config.json"),
        ({"vocab_size": "many"}, "config.json"),
    ],
)
def test_a_hub_export_with_a_bad_config_is_one_line(tmp_path, tiny_plain_dir, change, message):
    folder = hub_export(tmp_path, tiny_plain_dir, **change)
    with pytest.raises(ModelError, match=message) as caught:
        load_model_files(folder)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json", "tokenizer.json"])
def test_a_hub_export_whose_json_is_damaged_is_one_line(tmp_path, tiny_plain_dir, name):
    folder = hub_export(tmp_path, tiny_plain_dir)
    (folder / name).write_text("{ not json")
    with pytest.raises(ModelError, match=name):
        load_model_files(folder)


def test_a_hub_export_without_a_graph_names_where_it_looked(tmp_path, tiny_plain_dir):
    folder = hub_export(tmp_path, tiny_plain_dir)
    (folder / "onnx/model_q4.onnx").unlink()
    with pytest.raises(ModelError, match=r"no ONNX graph found.*onnx/model_q4\.onnx"):
        load_model_files(folder)


def test_a_folder_that_is_neither_says_so(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        load_model_files(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="not a model folder"):
        load_model_files(tmp_path / "empty")


# ------------------------------------------------------------------- the name people see


@pytest.mark.parametrize(
    ("given_name", "shown"),
    [
        ("qwen2.5-coder-0.5b-instruct-q8_0.gguf", "Qwen2.5 Coder 0.5B Instruct"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen2.5 0.5B Instruct"),
        ("Qwen/Qwen2.5-0.5B-Instruct-GGUF@0123abcd", "Qwen2.5 0.5B Instruct"),
        ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Llama 3.2 1B Instruct"),
        ("my_model-f16.safetensors", "My Model"),
        ("tiny.gguf", "Tiny"),
        ("gguf", "Gguf"),  # a name that is only a packing word stays a name
        ("   ", "Model"),
        ("x/.gguf", "Model"),
        ("a.gguf.gguf", "A"),
    ],
)
def test_file_and_repository_names_read_as_model_names(given_name, shown):
    assert pretty_model_name(given_name) == shown


def test_the_precision_follows_the_name_once_and_only_when_known():
    assert model_display_name("Qwen2.5 0.5B Instruct", "int4") == "Qwen2.5 0.5B Instruct · int4"
    assert model_display_name("Qwen2.5 0.5B Instruct · int4", "int4") == "Qwen2.5 0.5B Instruct · int4"
    assert model_display_name("Tiny", "?") == "Tiny"
    assert model_display_name("Tiny", "unknown") == "Tiny"


def test_a_built_folder_is_shown_by_its_source_name_and_precision(tiny_model_dir, tmp_path):
    files = load_model_files(tiny_model_dir)
    assert files.display_name == model_display_name(pretty_model_name(files.name), files.precision)
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps(manifest | {"display_name": "My assistant"}))
    assert load_model_files(folder).display_name == f"My assistant · {files.precision}"


@given(st.text(max_size=80))
def test_any_name_gives_a_non_blank_name_without_its_file_extension(text):
    shown = pretty_model_name(text)
    assert shown.strip()
    assert not shown.lower().endswith((".gguf", ".safetensors", ".onnx"))
