"""Read a Hugging Face Qwen2 folder: ``config.json``, ``*.safetensors`` (single or sharded), ``tokenizer.json``.

Safetensors is parsed directly (an 8-byte header length, a JSON header, then raw little-endian data), so
bf16 works without torch: a bf16 value is the top half of a float32.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.convert.tokenizer_files import stop_ids_from_vocab
from qwen_desktop.convert.weights import LM_HEAD, SUPPORTED_ARCHITECTURES, QwenConfig, TokenizerInfo
from qwen_desktop.engine.errors import ModelError, UnsupportedModelError

_DTYPES: dict[str, np.dtype[Any]] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "F64": np.dtype("<f8"),
}


class _SafetensorsFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        size = path.stat().st_size
        try:
            with path.open("rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise ModelError(f"{path.name}: not a safetensors file (too short)")
                (n,) = struct.unpack("<Q", head)
                if n > min(size - 8, 100_000_000):
                    raise ModelError(f"{path.name}: not a safetensors file (bad header length)")
                header = json.loads(fh.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelError(f"{path.name}: the safetensors header is corrupt") from None
        header.pop("__metadata__", None)
        self.data_start = 8 + n
        self.entries: dict[str, dict[str, Any]] = header
        for name, e in header.items():
            end = e["data_offsets"][1]
            if self.data_start + end > size:
                raise ModelError(f"{path.name}: the file is truncated (tensor {name} runs past the end)")
        self._map = np.memmap(path, dtype=np.uint8, mode="r")

    def read(self, name: str) -> np.ndarray:
        e = self.entries[name]
        dtype = _DTYPES.get(e["dtype"])
        if dtype is None:
            raise UnsupportedModelError(f"{self.path.name}: tensor {name} has unsupported dtype {e['dtype']}")
        begin, end = e["data_offsets"]
        raw = self._map[self.data_start + begin : self.data_start + end]
        shape = tuple(e["shape"])
        if raw.nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise ModelError(f"{self.path.name}: tensor {name} has the wrong number of bytes")
        arr = raw.view(dtype).reshape(shape)
        if e["dtype"] == "BF16":
            return (arr.astype(np.uint32) << 16).view(np.float32)
        return arr.astype(np.float32)


class HFFolderSource:
    """A Hugging Face model folder opened for reading."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.description = self.folder.name
        if not self.folder.is_dir():
            raise ModelError(f"{self.folder}: not a folder")
        cfg_path = self.folder / "config.json"
        if not cfg_path.is_file():
            raise ModelError(f"{self.folder.name}: config.json is missing (not a Hugging Face model folder?)")
        try:
            raw_cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ModelError(f"{self.folder.name}: config.json is not valid JSON ({exc})") from None
        self.architecture = str(raw_cfg.get("model_type", "unknown"))
        if self.architecture not in SUPPORTED_ARCHITECTURES:
            raise UnsupportedModelError(
                f"{self.folder.name}: architecture '{self.architecture}' is not supported "
                f"(Qwen Desktop runs {', '.join(SUPPORTED_ARCHITECTURES)} models: the Qwen2.5 family)"
            )
        self._files = self._open_weights()
        self._where: dict[str, _SafetensorsFile] = {}
        for f in self._files:
            for name in f.entries:
                self._where[name] = f
        self.source_files = tuple(f.path for f in self._files)
        try:
            self.config = QwenConfig(
                vocab_size=int(raw_cfg["vocab_size"]),
                hidden_size=int(raw_cfg["hidden_size"]),
                intermediate_size=int(raw_cfg["intermediate_size"]),
                num_layers=int(raw_cfg["num_hidden_layers"]),
                num_heads=int(raw_cfg["num_attention_heads"]),
                num_kv_heads=int(raw_cfg.get("num_key_value_heads", raw_cfg["num_attention_heads"])),
                rope_theta=float(raw_cfg.get("rope_theta", 1_000_000.0)),
                rms_norm_eps=float(raw_cfg.get("rms_norm_eps", 1e-6)),
                max_context=int(raw_cfg.get("max_position_embeddings", 32768)),
                tie_word_embeddings=bool(raw_cfg.get("tie_word_embeddings", False))
                or LM_HEAD not in self._where,
            )
        except KeyError as exc:
            raise ModelError(f"{self.folder.name}: config.json has no {exc.args[0]}") from None
        self.config.validate()
        self.tokenizer = self._read_tokenizer(raw_cfg)

    def _open_weights(self) -> list[_SafetensorsFile]:
        index = self.folder / "model.safetensors.index.json"
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            except (json.JSONDecodeError, KeyError):
                raise ModelError(f"{self.folder.name}: model.safetensors.index.json is corrupt") from None
            names = sorted(set(weight_map.values()))
        else:
            names = sorted(p.name for p in self.folder.glob("*.safetensors"))
        if not names:
            raise ModelError(f"{self.folder.name}: no *.safetensors weights found")
        files = []
        for n in names:
            p = self.folder / n
            if not p.is_file():
                raise ModelError(f"{self.folder.name}: weight shard {n} is missing")
            files.append(_SafetensorsFile(p))
        return files

    def _read_tokenizer(self, raw_cfg: dict[str, Any]) -> TokenizerInfo:
        tok_path = self.folder / "tokenizer.json"
        if not tok_path.is_file():
            raise ModelError(f"{self.folder.name}: tokenizer.json is missing")
        text = tok_path.read_text(encoding="utf-8")
        try:
            doc = json.loads(text)
            lookup: dict[str, int] = dict(doc["model"]["vocab"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise ModelError(f"{self.folder.name}: tokenizer.json is corrupt") from None
        specials = {}
        for t in doc.get("added_tokens", []):
            lookup[t["content"]] = int(t["id"])
            specials[t["content"]] = int(t["id"])
        tcfg: dict[str, Any] = {}
        tcfg_path = self.folder / "tokenizer_config.json"
        if tcfg_path.is_file():
            tcfg = json.loads(tcfg_path.read_text(encoding="utf-8"))
        template = tcfg.get("chat_template")
        if isinstance(template, list):  # newer files keep named templates in a list
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        jinja = self.folder / "chat_template.jinja"
        if template is None and jinja.is_file():
            template = jinja.read_text(encoding="utf-8")
        eos = raw_cfg.get("eos_token_id")
        if isinstance(eos, list):
            eos = eos[0] if eos else None
        stops, end_of_turn = stop_ids_from_vocab(lookup, None if eos is None else int(eos))
        bos = raw_cfg.get("bos_token_id")
        return TokenizerInfo(
            tokenizer_json=text,
            chat_template=template,
            eos_token_ids=stops,
            end_of_turn_id=end_of_turn,
            bos_token_id=None if bos is None else int(bos),
            pad_token_id=lookup.get("<|endoftext|>"),
            special_tokens=specials,
        )

    def tensor_names(self) -> list[str]:
        return list(self._where)

    def tensor(self, name: str) -> np.ndarray:
        f = self._where.get(name)
        if f is None:
            raise ModelError(f"{self.folder.name}: tensor {name} is missing")
        return f.read(name)

    def close(self) -> None:
        self._where.clear()
        self._files.clear()
