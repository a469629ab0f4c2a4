"""The parts both graph styles are written with (``convert.onnx_layers``): 4-bit initializers as ONNX packs
them, the rotary tables, the fast style's block sizes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from qwen_desktop.convert.onnx_layers import (
    BLOCK_SIZE,
    FAST_BLOCK_SIZES,
    PLAIN_FIT_BLOCK_SIZES,
    fast_block_size,
    rope_cache,
    uint4_tensor,
)


@pytest.mark.parametrize("shape", [(4, 6), (3, 5), (7,)])
def test_uint4_codes_read_back_as_written_two_to_a_byte(shape):
    codes = np.random.default_rng(1).integers(0, 16, shape).astype(np.uint8)
    t = uint4_tensor("w", codes)
    assert list(t.dims) == list(shape) and len(t.raw_data) == (codes.size + 1) // 2
    assert t.raw_data[0] == codes.reshape(-1)[0] | (codes.reshape(-1)[1] << 4)  # low nibble first
    np.testing.assert_array_equal(numpy_helper.to_array(t), codes)


def test_the_rotary_tables_turn_each_position_by_its_angles(tiny_cfg):
    cos, sin = rope_cache(tiny_cfg, 40)
    half = tiny_cfg.head_dim // 2
    assert cos.shape == sin.shape == (40, half) and cos.dtype == np.float32
    np.testing.assert_array_equal(cos[0], np.ones(half)) and np.testing.assert_array_equal(sin[0], 0)
    np.testing.assert_allclose(cos**2 + sin**2, 1.0, atol=1e-6)
    # the first pair turns one radian a position; the slowest turns by theta ** -(d - 2) / d
    np.testing.assert_allclose(np.arctan2(sin[1, 0], cos[1, 0]), 1.0, rtol=1e-6)
    slowest = tiny_cfg.rope_theta ** (-(tiny_cfg.head_dim - 2) / tiny_cfg.head_dim)
    np.testing.assert_allclose(np.arctan2(sin[1, -1], cos[1, -1]), slowest, rtol=1e-5)


def test_fast_block_sizes_by_layer_kind():
    for kind, size in FAST_BLOCK_SIZES.items():
        assert fast_block_size(f"layers.3.{kind}") == size
    assert fast_block_size("layers.0.something_else") == BLOCK_SIZE
    for kind, size in PLAIN_FIT_BLOCK_SIZES.items():  # without calibration these keep the plain blocks
        assert fast_block_size(f"layers.1.{kind}", fitted=False) == size
