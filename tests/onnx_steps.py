"""Run a built model folder position by position with plain ``session.run`` (no engine), for graph tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort


class StepRunner:
    """Format 3 fast graphs (``kv_layout`` views) write the new positions into the cache rows bound to their
    ``kv_new`` outputs and read them back through the ``kv_cache`` view, so those run with IO binding
    over one numpy buffer per layer and kind; the others hand their cache back and forth with ``run``."""

    def __init__(self, folder: Path, graph: str = "model.onnx", max_len: int = 256) -> None:
        self.manifest = json.loads((folder / "manifest.json").read_text())
        self.style = self.manifest["style"]
        cfg = self.manifest["config"]
        self.layers, self.kv, self.hd = cfg["num_layers"], cfg["num_kv_heads"], cfg["head_dim"]
        self.views = self.style == "fast" and self.manifest.get("kv_layout") == "views"
        self.max_len = max_len
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / graph), opts, providers=["CPUExecutionProvider"])
        self.out_names = [o.name for o in self.session.get_outputs()]
        head = self.manifest["files"].get("head")  # format 2: the decoder graphs end at "hidden"
        self.head = ort.InferenceSession(str(folder / head), opts) if head else None
        self.reset()

    def reset(self) -> None:
        self.length = 0
        names = [f"{i}.{k}" for i in range(self.layers) for k in ("key", "value")]
        if self.views:
            self.cache = {n: np.zeros((self.max_len, self.kv, self.hd), np.float32) for n in names}
        else:
            self.past = {
                f"past_key_values.{n}": np.zeros((1, self.kv, 0, self.hd), np.float32) for n in names
            }

    def feeds(self, ids: list[int]) -> dict[str, np.ndarray]:
        """The inputs of a pass over ``ids`` (views graphs: the ``kv_cache`` views, without the binding of
        the rows the graph writes; ``forward`` binds those)."""
        total = self.length + len(ids)
        feeds: dict[str, np.ndarray] = {"input_ids": np.array([ids], np.int64)}
        if self.views and total > self.max_len:  # the graph writes rows up to total
            grown = max(total, 2 * self.max_len)
            for n, buf in self.cache.items():
                self.cache[n] = np.concatenate(
                    [buf, np.zeros((grown - len(buf), *buf.shape[1:]), np.float32)]
                )
            self.max_len = grown
        if self.views:
            feeds |= {f"kv_cache.{n}": buf[:total] for n, buf in self.cache.items()}
        else:
            feeds |= self.past
            feeds["attention_mask"] = np.ones((1, total), np.int64)
        if self.style == "fast":
            feeds["num_logits_to_keep"] = np.array(len(ids), np.int64)
        else:
            feeds["position_ids"] = np.arange(self.length, total, dtype=np.int64)[None]
        return feeds

    def forward(self, ids: list[int]) -> np.ndarray:
        """Logits [len(ids), vocab] for new tokens after the cached ones."""
        total = self.length + len(ids)
        feeds = self.feeds(ids)
        if self.views:
            b = self.session.io_binding()
            for name, value in feeds.items():
                if name.startswith("kv_cache."):
                    b.bind_input(name, "cpu", 0, np.float32, list(value.shape), value.ctypes.data)
                else:
                    b.bind_cpu_input(name, value)
            for n, buf in self.cache.items():
                rows = buf[self.length : total]
                b.bind_output(
                    f"kv_new.{n}", "cpu", 0, np.float32, [1, len(ids), self.kv * self.hd], rows.ctypes.data
                )
            first = self.out_names[0]
            b.bind_output(first)
            self.session.run_with_iobinding(b)
            out0 = b.get_outputs()[-1].numpy()
        else:
            outs = self.session.run(None, feeds)
            for name, value in zip(self.out_names[1:], outs[1:], strict=True):
                self.past[name.replace("present.", "past_key_values.")] = value
            out0 = outs[0]
        self.length = total
        if self.head is not None:
            return self.head.run(None, {"hidden": out0})[0][0]
        return out0[0]
