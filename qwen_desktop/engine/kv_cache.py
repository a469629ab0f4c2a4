"""The KV cache, one class per layout a model folder's graphs use.

- ``ViewsKVCache`` (fast graphs, manifest format 3, ``kv_layout`` "views"): one sequence-major buffer per
  layer and kind; a pass reads the cached rows through a view and writes its new rows in place.
- ``SharedKVCache`` (fast graphs, format 2, ``kv_layout`` "shared"): GroupQueryAttention's buffer, bound as
  both ``past_key_values`` and ``present``, which the op writes in place.
- ``PlainKVCache`` (``style`` "plain", hub exports): the graph takes the past and hands back a new, longer
  ``present`` each pass.

``OnnxModel`` (session.py) owns one, keeps the token list beside it and calls ``bind`` before every pass.
The cache shapes a graph declares (checked when its session opens), the arrays a plain graph hands back and
the arrays a ``CacheState`` brings back are checked against the layout's: a wrong one raises
``CacheShapeError`` (one line) instead of attending over the wrong positions in silence, and a pass that would
write past the buffers raises ``ContextFullError`` before anything is bound.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.model_files import ModelFiles

KINDS = ("key", "value")


class ContextFullError(ModelError):
    """More tokens than the KV cache was sized for."""


class CacheShapeError(ModelError):
    """A cache array of another shape than the layout needs (a graph's output, a restored state)."""


@dataclass(frozen=True)
class CacheState:
    """A conversation's KV cache put aside (``OnnxModel.save_cache``): its tokens and, by ``"{layer}.{kind}"``,
    the arrays of the positions in use, in the layout's own shape."""

    tokens: list[int]
    arrays: dict[str, Any]


Dims = Sequence[int | None]  # a shape; None where any size will do


def _shown(dims: Sequence[Any]) -> str:
    """``[1, 2, ?, 64]``: a shape with its symbolic or open sizes as ``?``."""
    return "[" + ", ".join(str(d) if isinstance(d, int) else "?" for d in dims) + "]"


def _check(name: str, got: Sequence[Any], want: Dims, what: str) -> None:
    """Raise ``CacheShapeError`` unless ``got`` has ``want``'s rank and sizes (a symbolic ``got`` dim, as
    a graph declares a sequence length, matches anything)."""
    fits = len(got) == len(want) and all(
        w is None or not isinstance(g, int) or g == w for g, w in zip(got, want, strict=False)
    )
    if not fits:
        raise CacheShapeError(
            f"KV cache: {what} {name} has shape {_shown(got)}, the cache needs {_shown(want)}"
        )


def _restored(arrays: dict[str, Any], name: str) -> Any:
    if name not in arrays:
        raise CacheShapeError(f"KV cache: the restored state has no {name}")
    return arrays[name]


class KVCache(ABC):
    """Keys and values of up to ``max_len`` positions for ``num_layers`` layers.

    Args:
        num_layers: decoder layers (one key and one value array each).
        kv_heads: key/value heads per layer.
        head_dim: size of one head.
        max_len: capacity in positions (prompt + reply).
        dtype: the graphs' cache element type (float32 or float16).
        ort: the ``onnxruntime`` module.
    """

    layout = ""

    def __init__(
        self, num_layers: int, kv_heads: int, head_dim: int, max_len: int, dtype: Any, ort: Any
    ) -> None:
        self.kv_heads, self.head_dim, self.max_len = kv_heads, head_dim, max_len
        self.dtype = np.dtype(dtype)
        self.names = [f"{i}.{kind}" for i in range(num_layers) for kind in KINDS]
        self._ort = ort

    def check_room(self, past: int, n: int) -> None:
        """Raise ``ContextFullError`` unless ``n`` new positions fit after ``past`` cached ones."""
        if past + n > self.max_len:
            raise ContextFullError(
                f"the conversation needs {past + n} tokens but the context holds {self.max_len}"
            )

    @abstractmethod
    def graph_shapes(self) -> dict[str, Dims]:
        """The shape of each cache input and output a graph of this layout has, by its name."""

    def check_graph(self, session: Any) -> None:
        """Raise ``CacheShapeError`` unless ``session``'s cache inputs and outputs are the ones this cache
        binds, of its sizes (a folder whose manifest and graphs disagree fails on load, not mid-answer)."""
        declared = {io.name: io.shape for io in (*session.get_inputs(), *session.get_outputs())}
        for name, want in self.graph_shapes().items():
            if name not in declared:
                raise CacheShapeError(f"KV cache: the graph has no {name}")
            _check(name, declared[name], want, "the graph's")

    def attach(self, binding: Any) -> None:  # noqa: B027 (an optional hook: no-op by default)
        """Bind what stays bound for the binding's lifetime (once, when the session is opened)."""

    @abstractmethod
    def bind(self, binding: Any, past: int, n: int) -> None:
        """Bind the cache inputs and outputs of a pass of ``n`` new tokens after ``past`` cached ones."""

    def collect(self, outputs: dict[str, Any], past: int, n: int) -> None:  # noqa: B027 (as attach)
        """Take what a pass handed back (``present.*`` outputs by name) into the cache."""

    @abstractmethod
    def save(self, n: int) -> dict[str, Any]:
        """A copy of the first ``n`` positions, by array name."""

    @abstractmethod
    def restore(self, arrays: dict[str, Any], n: int) -> None:
        """Put back ``n`` positions that ``save`` made; checks every shape before it changes anything."""

    def rewind(self, n: int) -> None:  # noqa: B027 (as attach)
        """Keep only the first ``n`` positions (the in-place layouts just overwrite the rest later)."""


class ViewsKVCache(KVCache):
    """Format 3: one sequence-major buffer per layer and kind, ``[max_len, kv_heads, head_dim]``.

    A pass of ``n`` new tokens after ``past`` binds rows ``[0, past + n)`` as the graph's ``kv_cache.*``
    view (a contiguous prefix: no copy) and rows ``[past, past + n)`` as its ``kv_new.*`` outputs, which the
    graph writes before its attention reads them back through the view.
    """

    layout = "views"

    def __init__(
        self, num_layers: int, kv_heads: int, head_dim: int, max_len: int, dtype: Any, ort: Any
    ) -> None:
        super().__init__(num_layers, kv_heads, head_dim, max_len, dtype, ort)
        rows = (max_len, kv_heads, head_dim)  # [max_len, kv_heads, head_dim]
        self.buffers = {name: np.zeros(rows, self.dtype) for name in self.names}
        self._row_bytes = kv_heads * head_dim * self.dtype.itemsize
        self._slots = [
            (f"kv_cache.{name}", f"kv_new.{name}", buf.ctypes.data) for name, buf in self.buffers.items()
        ]
        # IOBinding's public methods make a device object per call (~7 us a binding); 48 bindings a pass
        # are cheaper through the object they wrap, with one device, where this ONNX Runtime has both.
        try:
            self._device: Any = ort.OrtDevice.make("cpu", 0)._get_c_device()
        except AttributeError:
            self._device = None

    def graph_shapes(self) -> dict[str, Dims]:
        kv, d = self.kv_heads, self.head_dim
        shapes: dict[str, Dims] = {}
        for name in self.names:
            shapes[f"kv_cache.{name}"] = [None, kv, d]  # [past + n, kv_heads, head_dim]
            shapes[f"kv_new.{name}"] = [1, None, kv * d]  # [1, n, kv_heads * head_dim]
        return shapes

    def bind(self, binding: Any, past: int, n: int) -> None:
        # The graph writes rows [past, past + n) of buffers that hold max_len: past that it would write
        # outside them.
        self.check_room(past, n)
        dtype, row = self.dtype, self._row_bytes
        kv, d = self.kv_heads, self.head_dim
        view, new = (
            [past + n, kv, d],
            [1, n, kv * d],
        )  # [past + n, kv_heads, head_dim], [1, n, kv_heads * head_dim]
        raw = getattr(binding, "_iobinding", None)
        if raw is not None and self._device is not None:
            device = self._device
            for view_name, new_name, ptr in self._slots:
                raw.bind_input(view_name, device, dtype, view, ptr)
                raw.bind_output(new_name, device, dtype, new, ptr + past * row)
            return
        for view_name, new_name, ptr in self._slots:
            binding.bind_input(view_name, "cpu", 0, dtype, view, ptr)
            binding.bind_output(new_name, "cpu", 0, dtype, new, ptr + past * row)

    def save(self, n: int) -> dict[str, Any]:
        return {name: buf[:n].copy() for name, buf in self.buffers.items()}  # [n, kv_heads, head_dim]

    def restore(self, arrays: dict[str, Any], n: int) -> None:
        want = (n, self.kv_heads, self.head_dim)
        for name in self.names:
            _check(name, np.shape(_restored(arrays, name)), want, "the restored state's")
        for name, buf in self.buffers.items():
            buf[:n] = arrays[name]


class SharedKVCache(KVCache):
    """Format 2: one ``[1, kv_heads, max_len, head_dim]`` buffer per layer and kind, bound as both the
    graph's ``past_key_values.*`` input and its ``present.*`` output: GroupQueryAttention writes the new
    positions in place, and the ``attention_mask`` length tells it how many are valid."""

    layout = "shared"

    def __init__(
        self, num_layers: int, kv_heads: int, head_dim: int, max_len: int, dtype: Any, ort: Any
    ) -> None:
        super().__init__(num_layers, kv_heads, head_dim, max_len, dtype, ort)
        self._shape = (1, kv_heads, max_len, head_dim)  # [batch, kv_heads, max_len, head_dim]
        self.values = {
            name: ort.OrtValue.ortvalue_from_numpy(np.zeros(self._shape, self.dtype)) for name in self.names
        }
        self._mask = np.ones((1, max_len), np.int64)  # [1, max_len]; attention_mask views are slices

    def graph_shapes(self) -> dict[str, Dims]:
        want = [None, self.kv_heads, None, self.head_dim]  # [batch, kv_heads, max_len, head_dim]
        return {f"{io}.{name}": want for name in self.names for io in ("past_key_values", "present")}

    def attach(self, binding: Any) -> None:
        for name, value in self.values.items():
            binding.bind_ortvalue_input(f"past_key_values.{name}", value)
            binding.bind_ortvalue_output(f"present.{name}", value)

    def bind(self, binding: Any, past: int, n: int) -> None:
        self.check_room(past, n)
        binding.bind_cpu_input("attention_mask", self._mask[:, : past + n])  # [1, past + n]

    def save(self, n: int) -> dict[str, Any]:
        # [batch, kv_heads, max_len, head_dim] -> the first n positions
        return {name: v.numpy()[:, :, :n].copy() for name, v in self.values.items()}

    def restore(self, arrays: dict[str, Any], n: int) -> None:
        want = (1, self.kv_heads, n, self.head_dim)
        for name in self.names:
            _check(name, np.shape(_restored(arrays, name)), want, "the restored state's")
        for name, value in self.values.items():
            full = value.numpy()  # a view of the bound buffer where ONNX Runtime gives one, else a copy
            full[:, :, :n] = arrays[name]
            if full.ctypes.data != value.data_ptr():
                value.update_inplace(full)


class PlainKVCache(KVCache):
    """Hub exports: each pass takes ``past_key_values.*`` of ``[1, kv_heads, past, head_dim]`` and hands
    back ``present.*`` of ``[1, kv_heads, past + n, head_dim]``, kept as it is (never copied) for the next."""

    layout = "plain"

    def __init__(
        self, num_layers: int, kv_heads: int, head_dim: int, max_len: int, dtype: Any, ort: Any
    ) -> None:
        super().__init__(num_layers, kv_heads, head_dim, max_len, dtype, ort)
        empty = np.zeros((1, kv_heads, 0, head_dim), self.dtype)  # [batch, kv_heads, 0, head_dim]
        self._empty = ort.OrtValue.ortvalue_from_numpy(empty)
        self.past: dict[str, Any] = {}  # name -> OrtValue [1, kv_heads, past, head_dim]; empty at 0

    def _want(self, n: int) -> list[int | None]:
        return [1, self.kv_heads, n, self.head_dim]

    def graph_shapes(self) -> dict[str, Dims]:
        want = [None, self.kv_heads, None, self.head_dim]  # [batch, kv_heads, past or past + n, head_dim]
        return {f"{io}.{name}": want for name in self.names for io in ("past_key_values", "present")}

    def bind(self, binding: Any, past: int, n: int) -> None:
        self.check_room(past, n)
        for name in self.names:
            binding.bind_ortvalue_input(f"past_key_values.{name}", self.past.get(name, self._empty))

    def collect(self, outputs: dict[str, Any], past: int, n: int) -> None:
        want = self._want(past + n)
        present = {}
        for name in self.names:
            value = outputs.get(f"present.{name}")
            if value is None:
                raise CacheShapeError(f"KV cache: the graph handed back no present.{name}")
            _check(f"present.{name}", value.shape(), want, "the graph's")
            present[name] = value
        self.past = present

    def save(self, n: int) -> dict[str, Any]:
        return dict(self.past)  # each pass makes new arrays: keeping references is a snapshot

    def restore(self, arrays: dict[str, Any], n: int) -> None:
        if arrays:  # a state saved at 0 positions holds none
            for name in self.names:
                _check(name, _restored(arrays, name).shape(), self._want(n), "the restored state's")
        self.past = dict(arrays)

    def rewind(self, n: int) -> None:
        if not self.past:
            return
        if n == 0:
            self.past = {}
            return
        self.past = {
            # [batch, kv_heads, past, head_dim] -> [batch, kv_heads, n, head_dim]
            k: self._ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v.numpy()[:, :, :n]))
            for k, v in self.past.items()
        }


def make_kv_cache(files: ModelFiles, max_len: int, dtype: Any, ort: Any) -> KVCache:
    """The cache ``files``' graphs use, sized for ``max_len`` positions."""
    if files.style == "plain":
        cls: type[KVCache] = PlainKVCache
    elif files.kv_layout == "views":
        cls = ViewsKVCache
    else:
        cls = SharedKVCache
    return cls(files.num_layers, files.num_kv_heads, files.head_dim, max_len, dtype, ort)
