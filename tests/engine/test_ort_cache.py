"""The optimized-graph cache: made on the first load, read by the next, keyed by the graph file, replaced
when damaged, skipped when it cannot be written, and tidied of copies no graph will use again."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.engine.ort_cache import CACHE_SOURCE, drop_stale_cache_entries, optimized_cache_path
from qwen_desktop.engine.session import OnnxModel

PROMPT = [5, 17, 100, 3, 250, 7, 9, 42, 64, 128, 11, 12, 13, 14, 15, 16, 200, 201, 202, 203]
GRAPHS = ("model.onnx", "prefill.onnx", "head.onnx")


def _logits(model):
    """A prompt through the prefill graph and two replies through the decode graph."""
    return [model.forward(PROMPT).copy(), model.forward([7]).copy(), model.forward([8]).copy()]


@pytest.fixture()
def folder(tmp_path, tiny_model_dir):
    copy = tmp_path / "m"
    shutil.copytree(tiny_model_dir, copy)
    return copy


@pytest.mark.usefixtures("int8_prefill_on")
def test_the_first_load_writes_a_copy_of_each_graph_and_the_next_reads_them_with_the_same_answers(
    tmp_path, folder
):
    cache = tmp_path / "ort"
    files = load_model_files(folder)
    first = OnnxModel(files, threads=1, max_len=64, cache_root=cache)
    assert not first.from_cache
    # the first load too runs on the copy it wrote, whose weights are mapped from the file (the session
    # that optimized the graph kept them in anonymous memory: ~1 GB more for the 0.5B model)
    assert all(path.is_relative_to(cache) for paths in first.graph_files.values() for path in paths)
    for graph in GRAPHS:
        cached = optimized_cache_path(folder / graph, cache)
        assert cached.is_file() and cached.with_name("model.opt.onnx.data").is_file()
        assert (cached.parent / CACHE_SOURCE).read_text(encoding="utf-8") == str((folder / graph).resolve())
    second = OnnxModel(files, threads=1, max_len=64, cache_root=cache)
    assert second.from_cache
    assert all(path.is_relative_to(cache) for paths in second.graph_files.values() for path in paths)
    uncached = OnnxModel(files, threads=1, max_len=64)
    want = _logits(uncached)
    for got in (_logits(first), _logits(second)):
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))


def test_the_key_follows_the_graph_file(tmp_path, folder):
    cache = tmp_path / "ort"
    graph = folder / "model.onnx"
    before = optimized_cache_path(graph, cache)
    assert optimized_cache_path(graph, cache) == before
    assert optimized_cache_path(folder / "prefill.onnx", cache) != before
    graph.touch()  # a rebuilt graph: a new copy, the old one is never read again
    assert optimized_cache_path(graph, cache) != before


def test_a_damaged_copy_is_made_again_and_a_cache_that_cannot_be_written_is_skipped(tmp_path, folder):
    files = load_model_files(folder)
    want = _logits(OnnxModel(files, threads=1, max_len=64))
    cache = tmp_path / "ort"
    OnnxModel(files, threads=1, max_len=64, cache_root=cache)
    cached = optimized_cache_path(folder / "model.onnx", cache)
    cached.write_bytes(b"garbage")  # a damaged copy: dropped and made again
    again = OnnxModel(files, threads=1, max_len=64, cache_root=cache)
    assert not again.from_cache and cached.stat().st_size > 100
    assert all(np.array_equal(g, w) for g, w in zip(_logits(again), want, strict=True))
    assert OnnxModel(files, threads=1, max_len=64, cache_root=cache).from_cache
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # the cache folder cannot be made: the graphs open without it
    model = OnnxModel(files, threads=1, max_len=64, cache_root=blocked)
    assert not model.from_cache and model.graph_files["decode"] == (folder / "model.onnx",)
    assert all(np.array_equal(g, w) for g, w in zip(_logits(model), want, strict=True))


@pytest.mark.usefixtures("int8_prefill_on")
def test_stale_copies_are_removed_when_a_new_one_is_made(tmp_path, folder, tiny_model_dir):
    gone = tmp_path / "gone"
    shutil.copytree(tiny_model_dir, gone)
    cache = tmp_path / "ort"
    OnnxModel(load_model_files(gone), threads=1, max_len=32, cache_root=cache)
    OnnxModel(load_model_files(folder), threads=1, max_len=32, cache_root=cache)
    first = {optimized_cache_path(folder / g, cache).parent for g in GRAPHS}
    assert first <= set(cache.iterdir())
    assert len(list(cache.iterdir())) == 6  # three graphs of two folders
    shutil.rmtree(gone)  # a deleted model
    (folder / "model.onnx").touch()  # a rebuilt graph: a new key
    model = OnnxModel(load_model_files(folder), threads=1, max_len=32, cache_root=cache)
    now = set(cache.iterdir())
    assert now == {optimized_cache_path(folder / g, cache).parent for g in GRAPHS}
    assert optimized_cache_path(folder / "prefill.onnx", cache).parent in first  # still valid: kept
    assert model.forward(PROMPT).shape == (1, model.files.vocab_size)


def test_tidying_keeps_the_copies_in_use_and_of_other_live_graphs_only(tmp_path):
    cache, graphs = tmp_path / "ort", tmp_path / "graphs"
    graphs.mkdir()
    live, other = graphs / "live.onnx", graphs / "other.onnx"
    live.write_bytes(b"x")
    other.write_bytes(b"y")

    def entry(name, source):
        path = cache / name
        path.mkdir(parents=True)
        if source is not None:
            (path / CACHE_SOURCE).write_text(str(source), encoding="utf-8")
        return path

    kept = entry("in-use", live)
    older = entry("older-copy-of-live", live)  # the graph was rebuilt since
    of_other = entry("copy-of-other", other)  # another model's graph: still used
    deleted = entry("copy-of-deleted", graphs / "deleted.onnx")
    unnamed = entry("made-before-graph-txt", None)
    partial = entry("half-written.partial", other)
    (cache / "a-file").write_text("left alone")
    drop_stale_cache_entries(cache, [kept])
    assert {p.name for p in cache.iterdir()} == {kept.name, of_other.name, "a-file"}
    assert not any(p.exists() for p in (older, deleted, unnamed, partial))
