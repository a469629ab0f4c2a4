"""Does this CPU's int8 matrix kernel add its products exactly? One small run of ONNX Runtime decides.

The prefill graph multiplies uint8 activations (zero point 128) by int8 weights with
``MatMulIntegerToFloat``. With AVX-512 VNNI, AVX-VNNI or AMX, ONNX Runtime's kernel adds each product into
32 bits. Without them (AVX2-only laptops, AVX-512 CPUs without VNNI) it multiplies pairs into 16-bit sums
that clip at 32767. Two large activations times two large weights of the same sign then come out wrong.
On such CPUs the tiny test model's prompt logits were 0.9-1.8 off the float reference through the prefill
graph and 0.2 off through the 4-bit decode graph, whose kernel does not clip (AMD EPYC, AVX2 only).

``int8_products_clip`` runs a ``MatMulIntegerToFloat`` of the same shape family (``data/int8_probe.onnx``,
written by ``probe_graph``; a test keeps the two the same), with inputs at the extremes, on the CPU execution
provider and compares with the exact sum. The file is read rather than built at each start: importing the
``onnx`` package to build it took 0.9 s of a 1.6 s load. It asks the kernel
ONNX Runtime really picks, so no CPU flag table is needed, and it works on every OS. The answer is kept
for the process.
"""

from __future__ import annotations

import functools
import logging
from importlib import resources

import numpy as np

log = logging.getLogger(__name__)

_M, _K, _N = 16, 64, 16  # a prompt-sized product: the kernel the prefill graph gets, not a vector path


PROBE_FILE = "data/int8_probe.onnx"


def probe_graph() -> bytes:
    """The probe model's bytes, as ``data/int8_probe.onnx`` holds them (needs the ``onnx`` package)."""
    from onnx import TensorProto, helper

    inputs = [
        helper.make_tensor_value_info("a", TensorProto.UINT8, [_M, _K]),
    ]
    weights = np.full((_K, _N), 127, np.int8)
    inits = [
        helper.make_tensor("b", TensorProto.INT8, [_K, _N], weights.tobytes(), raw=True),
        helper.make_tensor("a_scale", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("b_scale", TensorProto.FLOAT, [_N], [1.0] * _N),
        helper.make_tensor("a_zero", TensorProto.UINT8, [], [128]),
    ]
    node = helper.make_node(
        "MatMulIntegerToFloat",
        ["a", "b", "a_scale", "b_scale", "a_zero"],
        ["y"],
        domain="com.microsoft",
    )
    graph = helper.make_graph(
        [node],
        "int8_check",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [_M, _N])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    return bytes(model.SerializeToString())


@functools.cache
def int8_products_clip() -> bool:
    """True when ONNX Runtime's int8 GEMM on this CPU clips pairs of products at 16 bits (see module doc).

    A failure to run the probe (an ONNX Runtime without the contrib op) counts as "clips": the caller then
    takes the path that is exact everywhere, which only costs speed.
    """
    try:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        probe = resources.files("qwen_desktop").joinpath(PROBE_FILE).read_bytes()
        session = ort.InferenceSession(probe, opts, providers=["CPUExecutionProvider"])
        a = np.full((_M, _K), 255, np.uint8)  # 127 after the zero point
        (y,) = session.run(None, {"a": a})
    except Exception:  # any failure means "do not trust the int8 graph"
        log.warning("int8 kernel check failed to run; prompts use the 4-bit graph", exc_info=True)
        return True
    exact = float(_K * 127 * 127)
    return bool(np.abs(np.asarray(y) - exact).max() > 0.5)
