"""The decode ceiling bench prints: bytes a decode step reads, and the memory's read speed."""

from __future__ import annotations

import math

from qwen_desktop.engine.ceiling import decode_bytes, read_bandwidth


def test_an_int4_step_reads_about_a_seventh_of_the_fp32_weights(tiny_model_dir, tiny_fp32_dir, tiny_cfg):
    int4, fp32 = decode_bytes(tiny_model_dir), decode_bytes(tiny_fp32_dir)
    c = tiny_cfg
    # fp32: every layer's q, k, v, o, gate, up, down and the (tied) head, 4 bytes a weight
    per_layer = c.hidden_size * (c.num_heads * c.head_dim + 2 * c.num_kv_heads * c.head_dim)
    per_layer += c.num_heads * c.head_dim * c.hidden_size + 3 * c.hidden_size * c.intermediate_size
    assert fp32 >= 4 * (c.num_layers * per_layer + c.vocab_size * c.hidden_size)
    assert 4 < fp32 / int4 < 9  # 4-bit codes plus a scale and zero point per block
    assert int4 < sum(p.stat().st_size for p in tiny_model_dir.iterdir())


def test_read_bandwidth_is_a_plausible_figure():
    speed = read_bandwidth(threads=2, megabytes=64, rounds=2)
    assert math.isfinite(speed) and 1e8 < speed < 1e13  # between 0.1 GB/s and 10 TB/s
