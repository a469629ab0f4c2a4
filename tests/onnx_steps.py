"""Run a built model folder position by position with plain ``session.run`` (no engine), for graph tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort


class StepRunner:
    def __init__(self, folder: Path, graph: str = "model.onnx") -> None:
        self.manifest = json.loads((folder / "manifest.json").read_text())
        self.style = self.manifest["style"]
        cfg = self.manifest["config"]
        self.layers, self.kv, self.hd = cfg["num_layers"], cfg["num_kv_heads"], cfg["head_dim"]
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / graph), opts, providers=["CPUExecutionProvider"])
        self.out_names = [o.name for o in self.session.get_outputs()]
        head = self.manifest["files"].get("head")  # format 2: the decoder graphs end at "hidden"
        self.head = ort.InferenceSession(str(folder / head), opts) if head else None
        self.reset()

    def reset(self) -> None:
        self.length = 0
        self.past = {
            f"past_key_values.{i}.{k}": np.zeros((1, self.kv, 0, self.hd), np.float32)
            for i in range(self.layers)
            for k in ("key", "value")
        }

    def forward(self, ids: list[int]) -> np.ndarray:
        """Logits [len(ids), vocab] for new tokens after the cached ones."""
        total = self.length + len(ids)
        feeds = dict(self.past)
        feeds["input_ids"] = np.array([ids], np.int64)
        feeds["attention_mask"] = np.ones((1, total), np.int64)
        if self.style == "fast":
            feeds["num_logits_to_keep"] = np.array(len(ids), np.int64)
        else:
            feeds["position_ids"] = np.arange(self.length, total, dtype=np.int64)[None]
        outs = self.session.run(None, feeds)
        for name, value in zip(self.out_names[1:], outs[1:], strict=True):
            self.past[name.replace("present.", "past_key_values.")] = value
        self.length = total
        if self.head is not None:
            return self.head.run(None, {"hidden": outs[0]})[0][0]
        return outs[0][0]
