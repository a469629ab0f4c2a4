"""The blockwise quantizer: layout MatMulNBits reads, and the range search that lowers the error."""

from __future__ import annotations

import numpy as np
import pytest

from qwen_desktop.convert.quant import quantize_blockwise, quantize_gptq


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_codes_pack_and_dequantize(bits):
    w = np.random.default_rng(0).standard_normal((8, 100)).astype(np.float32)
    q = quantize_blockwise(w, bits)
    assert q.packed.shape == (8, 4, 32 * bits // 8)
    assert q.scales.shape == (8, 4)
    step = q.scales[:, :, None].repeat(32, axis=2).reshape(8, -1)[:, :100]
    within = (np.abs(q.dequantize() - w) <= step * 0.5 + 1e-6).mean()
    assert within > (0.97 if bits > 2 else 0.9)  # only clipped outliers exceed (4 levels clip more)
    per = 8 // bits
    codes = q.codes.reshape(8, 4, 32)
    for j in range(per):  # code j of each byte's group at bit j * bits
        part = (q.packed >> (j * bits)) & ((1 << bits) - 1)
        assert np.array_equal(part, codes[:, :, j::per])
    if bits < 8:  # 4 blocks' zero points, packed the same way
        assert q.zero_points.shape == (8, -(-4 * bits // 8))
        zp = [(q.zero_points[:, i // per] >> (i % per * bits)) & ((1 << bits) - 1) for i in range(4)]
        assert np.array_equal(np.stack(zp, 1), q.zp_codes)


@pytest.mark.parametrize(("bits", "block"), [(2, 128), (2, 32), (4, 64)])
def test_onnx_runtime_reads_the_packed_layout(bits, block):
    """MatMulNBits on the packed codes gives what the dequantized matrix gives, with a K that does not
    fill the last block and a number of blocks that does not fill the last zero-point byte."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(bits * block)
    n, k = 40, 896
    w = rng.standard_normal((n, k)).astype(np.float32)
    q = quantize_blockwise(w, bits, block)
    node = helper.make_node(
        "MatMulNBits",
        ["x", "w", "s", "z"],
        ["y"],
        domain="com.microsoft",
        K=k,
        N=n,
        bits=bits,
        block_size=block,
    )
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])],
        [
            numpy_helper.from_array(q.packed, "w"),
            numpy_helper.from_array(q.scales.reshape(-1), "s"),
            numpy_helper.from_array(q.zero_points.reshape(-1), "z"),
        ],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    session = ort.InferenceSession(
        helper.make_model(graph, opset_imports=opsets).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    x = rng.standard_normal((3, k)).astype(np.float32)
    want = x @ q.dequantize().T
    assert np.abs(session.run(None, {"x": x})[0] - want).max() < 1e-3 * np.abs(want).max()


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


def _activations(rng, tokens, k):
    """Inputs like a decoder layer's: correlated channels, a few much larger than the rest."""
    mix = rng.standard_normal((k, k)).astype(np.float32) / np.sqrt(k)
    scale = np.ones(k, np.float32)
    scale[rng.choice(k, 4, replace=False)] = 8.0
    return (rng.standard_normal((tokens, k)).astype(np.float32) @ mix) * scale


def _output_error(x, w, q):
    want = x @ w.T
    return float(np.square(x @ q.dequantize().T - want).sum() / np.square(want).sum())


@pytest.mark.parametrize("block", [32, 64])
def test_gptq_fit_lowers_the_output_error_on_inputs_it_was_not_fitted_to(block):
    rng = np.random.default_rng(2)
    w = rng.standard_t(3, size=(96, 256)).astype(np.float32)
    both = _activations(rng, 4096, 256)  # one distribution: fit to half the tokens, judge on the other
    seen, new = both[:2048], both[2048:]
    plain = quantize_blockwise(w, 4, block)
    fitted = quantize_gptq(w, seen, 4, block)
    assert _output_error(new, w, fitted) < 0.8 * _output_error(new, w, plain)


def test_gptq_fit_is_packed_as_the_plain_fit_is():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((16, 128)).astype(np.float32)
    x = _activations(rng, 300, 128)
    x[:, 5] = 0.0  # an input that is never used: its weights are free, and nothing divides by zero
    q = quantize_gptq(w, x, 4, 64)
    plain = quantize_blockwise(w, 4, 64)
    for name in ("packed", "scales", "zero_points", "codes", "zp_codes"):
        assert getattr(q, name).shape == getattr(plain, name).shape, name
        assert getattr(q, name).dtype == getattr(plain, name).dtype, name
    assert np.isfinite(q.dequantize()).all() and q.codes.max() <= 15
    low, high = q.packed & 0x0F, q.packed >> 4
    codes = q.codes.reshape(16, 2, 64)
    assert np.array_equal(low, codes[:, :, 0::2]) and np.array_equal(high, codes[:, :, 1::2])
    assert np.array_equal(q.zero_points[:, 0] & 0x0F, q.zp_codes[:, 0])
    assert np.array_equal(q.zero_points[:, 0] >> 4, q.zp_codes[:, 1])


def test_gptq_fit_refuses_what_it_cannot_fit():
    w = np.zeros((4, 96), np.float32)
    with pytest.raises(ValueError, match="multiple"):
        quantize_gptq(w, np.ones((10, 96), np.float32), 4, 64)
    with pytest.raises(ValueError, match=r"\[tokens, 96\]"):
        quantize_gptq(w, np.ones((10, 95), np.float32), 4, 32)
    with pytest.raises(ValueError, match="4-bit"):
        quantize_gptq(w, np.ones((10, 96), np.float32), 8, 32)
    with pytest.raises(ValueError, match="2, 4 or 8"):
        quantize_blockwise(w, 3)


@pytest.mark.parametrize("k", [7, 128, 129, 300, 1000])
def test_gptq_error_spread_matrix_is_the_cholesky_factor_of_the_inverse(k):
    """The fit spreads each column's error by U, the upper Cholesky factor of (XᵀX + damping)^-1. It is
    computed without a general inverse (by halves, any size, odd splits included); it must still be that
    factor, or the fit would push errors the wrong way."""
    from qwen_desktop.convert.quant import _inverse_cholesky_upper

    rng = np.random.default_rng(k)
    x = rng.standard_normal((2 * k, k)) * rng.uniform(0.1, 5.0, k)
    h = x.T @ x
    h[np.diag_indices(k)] += np.mean(np.diag(h))
    u = _inverse_cholesky_upper(h.astype(np.float32))
    assert np.array_equal(u, np.triu(u))
    want = np.linalg.cholesky(np.linalg.inv(h)).T
    assert np.abs(u - want).max() <= 1e-4 * np.abs(want).max()
