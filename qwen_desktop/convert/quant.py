"""Blockwise weight quantization in the layouts ONNX Runtime's MatMulNBits and GatherBlockQuantized read.

A weight ``W`` of shape ``[N, K]`` (out x in, the Hugging Face layout) is cut along K into blocks of
``block_size`` values. Each block gets a float scale and an unsigned zero point (asymmetric quantization:
``w ~ (q - zero_point) * scale``, with 0 always representable). Codes of fewer than 8 bits are packed
little end first: two 4-bit codes per byte (the even element in the low nibble), four 2-bit codes per byte.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockQuantized:
    """A quantized ``[N, K]`` matrix.

    Attributes:
        packed: uint8 ``[N, n_blocks, block_size * bits // 8]``; MatMulNBits' ``B`` input.
        scales: float32 ``[N, n_blocks]``.
        zero_points: uint8, ``[N, ceil(n_blocks * bits / 8)]`` (packed like the codes below 8 bits).
        codes: uint8 ``[N, n_blocks * block_size]``, one unpacked code per value (for dequantizing and tests).
        zp_codes: uint8 ``[N, n_blocks]``, one zero point per block, unpacked.
    """

    bits: int
    block_size: int
    n: int
    k: int
    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray
    codes: np.ndarray
    zp_codes: np.ndarray

    @property
    def n_blocks(self) -> int:
        return int(self.scales.shape[1])

    def dequantize(self) -> np.ndarray:
        """Back to float32 ``[N, K]``."""
        q = self.codes.reshape(self.n, self.n_blocks, self.block_size).astype(np.float32)
        w = (q - self.zp_codes[:, :, None].astype(np.float32)) * self.scales[:, :, None]
        out: np.ndarray = w.reshape(self.n, -1)[:, : self.k]
        return out


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack ``bits``-bit codes (2 or 4) along the last axis, whose length is a multiple of 8 / bits:
    element ``j`` of each byte's group sits at bit ``j * bits``."""
    per = 8 // bits
    packed = np.zeros((*codes.shape[:-1], codes.shape[-1] // per), np.uint8)
    for j in range(per):
        packed |= (codes[..., j::per] << (j * bits)).astype(np.uint8)
    return packed


SEARCH_SHRINKS = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7)


def _range_step(lo: np.ndarray, hi: np.ndarray, qmax: int) -> tuple[np.ndarray, np.ndarray]:
    """Each block's scale (float32) and zero point (uint8) for quantizing the range [lo, hi]."""
    scales = (hi - lo) / qmax
    scales = np.where(scales == 0.0, 1.0, scales).astype(np.float32)
    zp = np.clip(np.round(-lo / scales), 0, qmax).astype(np.uint8)  # [N, n_blocks]
    return scales, zp


def _fit(
    blocks: np.ndarray, lo: np.ndarray, hi: np.ndarray, qmax: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scales, zero points and codes for blocks quantized over the range [lo, hi] (which contains 0)."""
    scales, zp = _range_step(lo, hi, qmax)
    codes = np.clip(np.round(blocks / scales[:, :, None]) + zp[:, :, None], 0, qmax).astype(np.uint8)
    return scales, zp, codes


def _search_error(
    blocks: np.ndarray, lo: np.ndarray, hi: np.ndarray, qmax: int, work: np.ndarray
) -> np.ndarray:
    """The squared error of each block quantized over [lo, hi], as ``_fit`` would quantize it.

    The same arithmetic as ``_fit`` and dequantizing its codes (so the same errors, bit for bit), but in
    float32 in the one ``work`` buffer: the search runs over every weight of the model seven times.
    """
    scales, zp_codes = _range_step(lo, hi, qmax)
    zp = zp_codes.astype(np.float32)[:, :, None]
    s3 = scales[:, :, None]
    np.divide(blocks, s3, out=work)
    np.round(work, out=work)
    work += zp
    np.clip(work, 0, qmax, out=work)
    work -= zp
    work *= s3
    work -= blocks
    np.square(work, out=work)
    err: np.ndarray = work.sum(axis=-1)
    return err


def quantize_blockwise(
    w: np.ndarray, bits: int = 4, block_size: int = 32, search: bool = True
) -> BlockQuantized:
    """Quantize a float ``[N, K]`` matrix to ``bits`` (2, 4 or 8) in blocks along K.

    With ``search``, each block's range is also tried narrowed (clipping outliers) and the variant with the
    least squared error is kept (below 8 bits only: at 8 bits the step is already fine).
    """
    if bits not in (2, 4, 8):
        raise ValueError(f"bits must be 2, 4 or 8, got {bits}")
    # contiguous: the error-feedback fit hands in a transposed view, whose blocks the search below would
    # otherwise read with a stride of a whole row (3x the time of the fit on gate_up_proj)
    w = np.ascontiguousarray(w, dtype=np.float32)
    n, k = w.shape
    n_blocks = -(-k // block_size)
    pad = n_blocks * block_size - k
    if pad:
        w = np.pad(w, ((0, 0), (0, pad)))
    blocks = w.reshape(n, n_blocks, block_size)
    qmax = (1 << bits) - 1
    lo = np.minimum(blocks.min(axis=-1), 0.0)  # [N, n_blocks]
    hi = np.maximum(blocks.max(axis=-1), 0.0)
    if search and bits < 8:
        # Narrowing the range clips a few outliers but gives every other value a finer step; keep,
        # per block, whichever range quantizes the block with the least squared error (the first such
        # range on a tie), then quantize each block once with its range.
        work = np.empty(blocks.shape, np.float32)
        best = _search_error(blocks, lo, hi, qmax, work)
        shrink = np.ones(lo.shape, np.float32)
        for factor in SEARCH_SHRINKS:
            err = _search_error(blocks, lo * factor, hi * factor, qmax, work)
            better = err < best
            shrink[better] = factor
            np.minimum(best, err, out=best)
        del work
        lo, hi = lo * shrink, hi * shrink
    scales, zp, codes = _fit(blocks, lo, hi, qmax)
    return _packed(bits, k, scales, zp, codes)


def _packed(bits: int, k: int, scales: np.ndarray, zp: np.ndarray, codes: np.ndarray) -> BlockQuantized:
    """The MatMulNBits layout of codes ``[N, n_blocks, block_size]`` with their scales and zero points."""
    n, n_blocks, block_size = codes.shape
    if bits < 8:
        per = 8 // bits
        packed = pack_codes(codes, bits)  # [N, n_blocks, block_size * bits / 8]
        # padding blocks get the middle code, as ONNX Runtime assumes where no zero point is given
        zp_padded = np.pad(zp, ((0, 0), (0, -n_blocks % per)), constant_values=1 << (bits - 1))
        zero_points = pack_codes(zp_padded, bits)  # [N, ceil(n_blocks * bits / 8)]
    else:
        packed = codes
        zero_points = zp
    return BlockQuantized(
        bits=bits,
        block_size=block_size,
        n=n,
        k=k,
        packed=packed,
        scales=scales,
        zero_points=zero_points,
        codes=codes.reshape(n, -1),
        zp_codes=zp,
    )


# Damping of the error-feedback fit, as a fraction of the mean diagonal of X^T X. Strong on purpose: fitted
# to ~1000 calibration tokens, a light damping (0.01-0.1) lowers the error on those tokens and raises it on
# other text; at 1.0 the fit beats the plain one on held-out chat, code and Chinese (docs/models.md).
GPTQ_DAMPING = 1.0


# Rows of W^T the error-feedback fit updates at a time after each block (a temporary of this many rows).
LAZY_ROWS = 32


def _upper_triangular_inverse(r: np.ndarray) -> np.ndarray:
    """The inverse of the upper triangular ``r``, by halves: [[A, B], [0, D]]^-1 = [[A^-1, -A^-1 B D^-1], [0, D^-1]].

    Most of the work is two matrix products per level, which BLAS runs fast; numpy has no triangular inverse.
    """
    n = r.shape[0]
    if n <= 128:
        return np.triu(np.linalg.inv(r))
    m = n // 2
    a_inv = _upper_triangular_inverse(r[:m, :m])
    d_inv = _upper_triangular_inverse(r[m:, m:])
    out = np.zeros_like(r)
    out[:m, :m] = a_inv
    out[m:, m:] = d_inv
    out[:m, m:] = -(a_inv @ r[:m, m:]) @ d_inv
    return out


def _inverse_cholesky_upper(h: np.ndarray) -> np.ndarray:
    """The upper triangular ``U`` with ``U.T @ U == inv(h)``, for a symmetric positive definite ``h``.

    With ``J`` the reversal of the order, the lower Cholesky factor ``L`` of ``J h J`` gives ``h = R R^T`` with
    ``R = J L J`` upper triangular, so ``U = R^-1``: one Cholesky and one triangular inverse, no general
    inverse: ~4x faster for a 4864-square ``h``. The factor is taken in float64 (numpy's float32 Cholesky is
    2-3x slower here) and inverted in float32, which is accurate enough because the damping keeps ``h`` well
    conditioned.
    """
    lower = np.linalg.cholesky(np.ascontiguousarray(h[::-1, ::-1], dtype=np.float64))
    return _upper_triangular_inverse(np.ascontiguousarray(lower[::-1, ::-1], dtype=np.float32))


def quantize_gptq(
    w: np.ndarray, inputs: np.ndarray, bits: int = 4, block_size: int = 32, damping: float = GPTQ_DAMPING
) -> BlockQuantized:
    """Quantize ``w`` ``[N, K]`` like ``quantize_blockwise``, fitted to what ``x @ w.T`` gives on ``inputs``.

    ``inputs`` ``[tokens, K]`` are activations this layer sees (calibration text through the float model).
    The columns are quantized in order, and each one's rounding error is pushed onto the columns not yet
    quantized, weighted by how the inputs correlate (the GPTQ method: Frantar et al., 2022, "GPTQ:
    Accurate Post-Training Quantization for Generative Pre-trained Transformers"). A block's scale and
    zero point are chosen, by the plain search, from its weights as they stand when the fit reaches it.
    The result is packed exactly as ``quantize_blockwise``'s, so the graphs do not change.
    """
    if bits not in (2, 4):
        raise ValueError("the error-feedback fit is for 2- and 4-bit weights")
    w = np.asarray(w, dtype=np.float32)
    n, k = w.shape
    if k % block_size:
        raise ValueError(f"K={k} is not a multiple of the block size {block_size}")
    x = np.asarray(inputs, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] != k:
        raise ValueError(f"inputs must be [tokens, {k}], got {list(x.shape)}")
    h = x.T @ x  # float32 is enough: the damping keeps H well conditioned
    diag = np.diag_indices(k)
    dead = h[diag] <= 0.0  # an input that is always zero: its weights do not matter
    h[dead, dead] = 1.0
    h[diag] += damping * float(np.mean(h[diag]))
    # upper Cholesky factor of H^-1: row j says how column j's error spreads onto the later columns
    u = _inverse_cholesky_upper(h)
    # work on W^T, so that a column of W (one input channel across all outputs) is a contiguous row
    work = w.T.copy()
    work[dead] = 0.0
    qmax = (1 << bits) - 1
    n_blocks = k // block_size
    scales = np.empty((n, n_blocks), np.float32)
    zps = np.empty((n, n_blocks), np.uint8)
    codes_t = np.empty((k, n), np.uint8)
    err = np.empty((block_size, n), np.float32)
    col = np.empty(n, np.float32)
    for b in range(n_blocks):
        lo, hi = b * block_size, (b + 1) * block_size
        rows = work[lo:hi]
        fit = quantize_blockwise(rows.T, bits, block_size)
        s, z = fit.scales[:, 0], fit.zp_codes[:, 0]
        scales[:, b], zps[:, b] = s, z
        zf = z.astype(np.float32)
        for j in range(block_size):
            # column j as the errors of the block's earlier columns leave it: one product of what they
            # spread, not one update of every later column per column (no temporaries of the block's size)
            if j:
                np.dot(u[lo : lo + j, lo + j], err[:j], out=col)
                np.subtract(rows[j], col, out=col)
            else:
                col[:] = rows[j]
            c = np.clip(np.round(col / s) + zf, 0, qmax)
            codes_t[lo + j] = c
            err[j] = (col - (c - zf) * s) / u[lo + j, lo + j]
        # the block's errors onto the columns after it, a slice at a time (a [K, N] temporary is 0.5 GB
        # for the output head)
        for first in range(hi, k, LAZY_ROWS):
            last = min(k, first + LAZY_ROWS)
            work[first:last] -= u[lo:hi, first:last].T @ err
    return _packed(bits, k, scales, zps, np.ascontiguousarray(codes_t.T).reshape(n, n_blocks, block_size))
