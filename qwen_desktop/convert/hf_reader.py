"""Read a Hugging Face Qwen2 folder: ``config.json``, ``*.safetensors`` (single or sharded), ``tokenizer.json``.

Safetensors is parsed directly (an 8-byte header length, a JSON header, then raw little-endian data), so
bf16 works without torch: a bf16 value is the top half of a float32.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.convert.tokenizer_files import stop_ids_from_vocab
from qwen_desktop.convert.weights import (
    LM_HEAD,
    SUPPORTED_ARCHITECTURES,
    QwenConfig,
    TokenizerInfo,
    config_float,
    config_int,
)
from qwen_desktop.engine.errors import ModelError, UnsupportedModelError

_DTYPES: dict[str, np.dtype[Any]] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "F64": np.dtype("<f8"),
}


MAX_HEADER = 100_000_000


class _SafetensorsFile:
    """One ``.safetensors`` file; its header is checked in full (types, shapes, offsets inside the file and
    not overlapping) before a byte of data is read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            size = path.stat().st_size
            with path.open("rb") as fh:
                head = fh.read(8)
                if len(head) < 8:
                    raise ModelError(f"{path.name}: not a safetensors file (too short)")
                (n,) = struct.unpack("<Q", head)
                if n > min(size - 8, MAX_HEADER):
                    raise ModelError(f"{path.name}: not a safetensors file (bad header length)")
                header = json.loads(fh.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise ModelError(f"{path.name}: the safetensors header is corrupt") from None
        except OSError as exc:
            raise ModelError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
        if not isinstance(header, dict):
            raise ModelError(f"{path.name}: the safetensors header is not a table of tensors")
        header.pop("__metadata__", None)
        self.data_start = 8 + n
        self.entries: dict[str, dict[str, Any]] = {}
        spans = []
        for name, raw in header.items():
            e = self.entries[name] = _checked_entry(path.name, name, raw, size - self.data_start)
            spans.append((e["data_offsets"][0], e["data_offsets"][1], name))
        reached, last = 0, ""
        for begin, end, name in sorted(spans):
            if begin < reached and end > begin:
                raise ModelError(f"{path.name}: tensors {last} and {name} overlap (corrupt header)")
            if end > reached:
                reached, last = end, name
        self._map = np.memmap(path, dtype=np.uint8, mode="r") if size > self.data_start else None

    def info(self, name: str) -> tuple[tuple[int, ...], str]:
        e = self.entries[name]
        return tuple(e["shape"]), "float" if e["dtype"] in _DTYPES else e["dtype"]

    def read(self, name: str) -> np.ndarray:
        e = self.entries[name]
        dtype = _DTYPES.get(e["dtype"])
        if dtype is None:
            raise UnsupportedModelError(f"{self.path.name}: tensor {name} has unsupported dtype {e['dtype']}")
        begin, end = e["data_offsets"]
        shape = tuple(e["shape"])
        if end == begin or self._map is None:
            return np.zeros(shape, dtype=np.float32)
        arr = self._map[self.data_start + begin : self.data_start + end].view(dtype).reshape(shape)
        if e["dtype"] == "BF16":
            return (arr.astype(np.uint32) << 16).view(np.float32)
        return arr.astype(np.float32)


def _checked_entry(file: str, name: str, e: Any, data_size: int) -> dict[str, Any]:
    """A header entry that says what it is truthfully, as far as the header and the file size can tell."""
    bad = f"{file}: the safetensors header is corrupt (tensor {str(name)[:80]}"
    if not isinstance(e, dict):
        raise ModelError(f"{bad} is not described by a table)")
    dtype, shape, offsets = e.get("dtype"), e.get("shape"), e.get("data_offsets")
    if not isinstance(dtype, str):
        raise ModelError(f"{bad} has no dtype)")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise ModelError(f"{bad} has a shape that is not a list of whole numbers)")
    if any(d < 0 for d in shape) or len(shape) > 8:
        raise ModelError(f"{bad} has an impossible shape {shape[:9]})")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise ModelError(f"{bad} has no begin and end offsets)")
    begin, end = offsets
    if not 0 <= begin <= end:
        raise ModelError(f"{bad} has offsets {begin}..{end})")
    if end > data_size:
        raise ModelError(f"{file}: the file is truncated (tensor {str(name)[:80]} runs past the end)")
    item = _DTYPES.get(dtype)
    if item is not None and math.prod(shape) * item.itemsize != end - begin:
        raise ModelError(
            f"{file}: tensor {str(name)[:80]} has the wrong number of bytes for its shape {shape}"
        )
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


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
        except RecursionError:
            raise ModelError(
                f"{self.folder.name}: config.json is not valid JSON (nested too deeply)"
            ) from None
        if not isinstance(raw_cfg, dict):
            raise ModelError(f"{self.folder.name}: config.json is not a table of settings")
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

        def number(key: str, default: Any = None) -> int:
            value = raw_cfg.get(key, default)
            if value is None:
                raise ModelError(f"config.json has no {key}")
            return config_int(value, key)

        def real(key: str, default: float) -> float:
            return config_float(raw_cfg.get(key, default), key)

        try:
            self.config = QwenConfig(
                vocab_size=number("vocab_size"),
                hidden_size=number("hidden_size"),
                intermediate_size=number("intermediate_size"),
                num_layers=number("num_hidden_layers"),
                num_heads=number("num_attention_heads"),
                num_kv_heads=number("num_key_value_heads", raw_cfg.get("num_attention_heads")),
                rope_theta=real("rope_theta", 1_000_000.0),
                rms_norm_eps=real("rms_norm_eps", 1e-6),
                max_context=number("max_position_embeddings", 32768),
                tie_word_embeddings=bool(raw_cfg.get("tie_word_embeddings", False))
                or LM_HEAD not in self._where,
            )
            head_dim = raw_cfg.get("head_dim")
            self.config.validate(None if head_dim is None else config_int(head_dim, "head_dim"))
        except ModelError as exc:
            raise ModelError(f"{self.folder.name}: {exc}") from None
        self.tokenizer = self._read_tokenizer(raw_cfg)

    def _open_weights(self) -> list[_SafetensorsFile]:
        index = self.folder / "model.safetensors.index.json"
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
                names = sorted(set(weight_map.values()))
            except (
                json.JSONDecodeError,
                UnicodeDecodeError,
                RecursionError,
                KeyError,
                TypeError,
                AttributeError,
            ):
                raise ModelError(f"{self.folder.name}: model.safetensors.index.json is corrupt") from None
            for n in names:
                if not isinstance(n, str) or Path(n).name != n or n in ("", ".", ".."):
                    raise ModelError(
                        f"{self.folder.name}: model.safetensors.index.json names a shard outside the folder"
                    )
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
        try:
            return self._tokenizer_files(raw_cfg)
        except ModelError:
            raise
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ModelError(f"{self.folder.name}: a tokenizer file is not valid JSON") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError):
            raise ModelError(f"{self.folder.name}: the tokenizer files are corrupt") from None

    def _tokenizer_files(self, raw_cfg: dict[str, Any]) -> TokenizerInfo:
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
        if template is not None and not isinstance(template, str):
            raise ModelError(f"{self.folder.name}: the chat template is not text")
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

    def tensor_info(self, name: str) -> tuple[tuple[int, ...], str]:
        return self._where[name].info(name)

    def tensor(self, name: str) -> np.ndarray:
        f = self._where.get(name)
        if f is None:
            raise ModelError(f"{self.folder.name}: tensor {name} is missing")
        return f.read(name)

    def close(self) -> None:
        self._where.clear()
        self._files.clear()
