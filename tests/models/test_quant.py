"""The blockwise quantizer: layout MatMulNBits reads, and the range search that lowers the error."""

from __future__ import annotations

import numpy as np
import pytest

from qwen_desktop.models.quant import quantize_blockwise


@pytest.mark.parametrize("bits", [4, 8])
def test_codes_pack_and_dequantize(bits):
    w = np.random.default_rng(0).standard_normal((8, 100)).astype(np.float32)
    q = quantize_blockwise(w, bits)
    assert q.packed.shape == (8, 4, 32 * bits // 8)
    assert q.scales.shape == (8, 4)
    step = q.scales[:, :, None].repeat(32, axis=2).reshape(8, -1)[:, :100]
    assert (np.abs(q.dequantize() - w) <= step * 0.5 + 1e-6).mean() > 0.97  # only clipped outliers exceed
    if bits == 4:
        low = q.packed & 0x0F
        assert np.array_equal(low.reshape(8, -1), q.codes.reshape(8, 4, 32)[:, :, 0::2].reshape(8, -1))


def test_range_search_never_increases_the_error():
    w = (
        np.random.default_rng(1).standard_t(3, size=(64, 256)).astype(np.float32)
    )  # heavy tails, like LLM weights
    plain = quantize_blockwise(w, 4, search=False)
    searched = quantize_blockwise(w, 4, search=True)
    e_plain = np.square(plain.dequantize() - w).reshape(64, 8, 32).sum(-1)
    e_search = np.square(searched.dequantize() - w).reshape(64, 8, 32).sum(-1)
    assert (e_search <= e_plain + 1e-6).all()  # block by block
    assert e_search.sum() < 0.98 * e_plain.sum()
