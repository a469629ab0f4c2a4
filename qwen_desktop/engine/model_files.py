"""Find what a model folder holds: our builder's layout (manifest.json) or a hub ONNX export."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwen_desktop.engine.errors import ModelError

HUB_GRAPH_CANDIDATES = (
    "model.onnx",
    "onnx/model_q4f16.onnx",
    "onnx/model_q4.onnx",
    "onnx/model_int8.onnx",
    "onnx/model_quantized.onnx",
    "onnx/model.onnx",
)


@dataclass(frozen=True)
class ModelFiles:
    """A runnable model folder.

    Attributes:
        style: ``fast`` (our contrib-op graph with a shared KV buffer) or ``plain`` (hub export layout).
        prefill_graph: an optional second graph with the same inputs and outputs, faster for many tokens
            at once (the builder's int8 ``prefill.onnx``); None when the folder has none.
        head_graph: the output head as its own graph (``head.onnx``, manifest format 2): then ``graph`` and
            ``prefill_graph`` output final-norm ``hidden`` states of ``hidden_size``, and this turns them
            into logits. None when ``graph`` outputs logits itself.
        kv_layout: fast style: ``views`` (format 3: the graphs read the cached positions through views and
            output only the new ones) or ``shared`` (format 2: GroupQueryAttention and one
            past/present buffer per layer).
    """

    folder: Path
    graph: Path
    tokenizer: Path
    style: str
    num_layers: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_context: int
    stop_ids: tuple[int, ...]
    chat_template: str | None
    name: str
    precision: str = "unknown"
    manifest: dict[str, Any] = field(default_factory=dict)
    prefill_graph: Path | None = None
    head_graph: Path | None = None
    hidden_size: int = 0
    kv_layout: str = "shared"

    @property
    def display_name(self) -> str:
        """What people see: "Qwen2.5 Coder 0.5B Instruct · int4" (the manifest's own, else made from ``name``)."""
        own = self.manifest.get("display_name")
        base = own if isinstance(own, str) and own.strip() else pretty_model_name(self.name)
        return model_display_name(base, self.precision)


# Words at the end of a file or repository name that say how it is packed, not what the model is.
_PACKING = re.compile(
    r"(gguf|onnx|safetensors|q\d(_[a-z0-9]+)*|iq\d(_[a-z0-9]+)*|[bf]?f\d\d|fp\d\d|int\d|w\d+a\d+)",
    re.IGNORECASE,
)
_SIZE = re.compile(r"(\d+(\.\d+)?)([bm])", re.IGNORECASE)
_NO_PRECISION = ("", "?", "unknown")
_EXTENSIONS = (".gguf", ".safetensors", ".onnx", ".bin")


def pretty_model_name(text: str) -> str:
    """A model's name for people, from a file, folder or repository name.

    "Qwen/qwen2.5-coder-0.5b-instruct-q8_0.gguf" gives "Qwen2.5 Coder 0.5B Instruct": the owner, the file
    extension and trailing packing words (gguf, q8_0, f16, int4 …) go, separators become spaces, lowercase
    words are capitalised and sizes read "0.5B". Never raises; "Model" when nothing is left.
    """
    stem = str(text).strip().rsplit("/", 1)[-1].split("@", 1)[0]  # "owner/repo@revision" gives "repo"
    while stem.lower().endswith(_EXTENSIONS):
        stem = stem.rsplit(".", 1)[0]
    words = [w for w in re.split(r"[-\s]+", stem) if w]
    while len(words) > 1 and _PACKING.fullmatch(words[-1]):
        words.pop()
    out: list[str] = []
    for word in words:
        for part in (p for p in word.split("_") if p):
            size = _SIZE.fullmatch(part)
            if size:
                out.append(size.group(1) + size.group(3).upper())
            elif part.islower():
                out.append(part[:1].upper() + part[1:])
            else:
                out.append(part)
    return " ".join(out) or "Model"


def model_display_name(name: str, precision: str) -> str:
    """``name`` with its precision after a dot ("… · int4"), unless the precision is unknown or already there."""
    name = name.strip()
    if precision in _NO_PRECISION or name.endswith(f" · {precision}"):
        return name
    return f"{name} · {precision}"


def load_model_files(folder: Path) -> ModelFiles:
    """Describe the model in ``folder``, or raise ModelError saying what is missing."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelError(f"model folder {folder} does not exist")
    if (folder / "manifest.json").is_file():
        return _from_manifest(folder)
    if (folder / "config.json").is_file():
        return _from_hub_export(folder)
    raise ModelError(f"{folder.name}: not a model folder (no manifest.json or config.json)")


def _from_manifest(folder: Path) -> ModelFiles:
    from qwen_desktop.engine.manifest import read_manifest

    m = read_manifest(folder)
    try:
        cfg = m["config"]
        files = ModelFiles(
            folder=folder,
            graph=folder / m["files"]["model"],
            tokenizer=folder / m["files"]["tokenizer"],
            style=m["style"],
            num_layers=int(cfg["num_layers"]),
            num_kv_heads=int(cfg["num_kv_heads"]),
            head_dim=int(cfg["head_dim"]),
            vocab_size=int(cfg["vocab_size"]),
            max_context=int(m["max_context"]),
            stop_ids=tuple(int(t) for t in m["eos_token_ids"]),
            chat_template=m.get("chat_template"),
            name=str(m.get("name") or m["source"]["name"]),
            precision=str(m.get("precision", "unknown")),
            manifest=m,
            prefill_graph=_optional(folder, m["files"].get("prefill")),
            head_graph=folder / m["files"]["head"] if m["files"].get("head") else None,
            hidden_size=int(cfg.get("hidden_size", 0)),
            kv_layout=str(m.get("kv_layout") or "shared"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{folder.name}: manifest.json is incomplete ({exc})") from None
    _check_present(files)
    return files


def _read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``, or ModelError naming the file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelError(f"{path.parent.name}: {path.name} cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelError(f"{path.parent.name}: {path.name} is not valid JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict):
        raise ModelError(f"{path.parent.name}: {path.name} is not a JSON object")
    return doc


def _from_hub_export(folder: Path) -> ModelFiles:
    cfg = _read_json_object(folder / "config.json")
    if cfg.get("model_type") != "qwen2":
        raise ModelError(f"{folder.name}: architecture '{cfg.get('model_type')}' is not supported")
    graph = next((folder / c for c in HUB_GRAPH_CANDIDATES if (folder / c).is_file()), None)
    if graph is None:
        raise ModelError(f"{folder.name}: no ONNX graph found (looked for {', '.join(HUB_GRAPH_CANDIDATES)})")
    tcfg: dict[str, Any] = {}
    if (folder / "tokenizer_config.json").is_file():
        tcfg = _read_json_object(folder / "tokenizer_config.json")
    tok_path = folder / "tokenizer.json"
    try:
        stops: list[int] = []
        if tok_path.is_file():
            doc = _read_json_object(tok_path)
            ids = {t["content"]: int(t["id"]) for t in doc.get("added_tokens", [])}
            stops = [ids[t] for t in ("<|im_end|>", "<|endoftext|>") if t in ids]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ModelError(f"{folder.name}: tokenizer.json has broken added_tokens ({exc})") from None
    template = tcfg.get("chat_template")
    try:
        eos = cfg.get("eos_token_id")
        for e in eos if isinstance(eos, list) else [eos]:
            if e is not None and int(e) not in stops:
                stops.append(int(e))
        heads = int(cfg["num_attention_heads"])
        files = ModelFiles(
            folder=folder,
            graph=graph,
            tokenizer=tok_path,
            style="plain",
            num_layers=int(cfg["num_hidden_layers"]),
            num_kv_heads=int(cfg.get("num_key_value_heads", heads)),
            head_dim=int(cfg.get("head_dim", int(cfg["hidden_size"]) // heads)),
            vocab_size=int(cfg["vocab_size"]),
            max_context=int(cfg.get("max_position_embeddings", 32768)),
            stop_ids=tuple(stops),
            chat_template=template if isinstance(template, str) else None,
            name=folder.name,
        )
    except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise ModelError(f"{folder.name}: config.json is incomplete ({type(exc).__name__}: {exc})") from None
    _check_present(files)
    return files


def _optional(folder: Path, name: object) -> Path | None:
    """A listed extra graph, or None when it is not listed or was deleted (the model still runs without)."""
    if not isinstance(name, str) or not (folder / name).is_file():
        return None
    return folder / name


def _check_present(files: ModelFiles) -> None:
    from qwen_desktop.engine.manifest import KV_LAYOUTS

    if files.style == "fast" and files.kv_layout not in KV_LAYOUTS:
        raise ModelError(f"{files.folder.name}: unknown KV cache layout '{files.kv_layout}'; please update")
    if not files.graph.is_file():
        raise ModelError(f"{files.folder.name}: {files.graph.name} is missing")
    if files.head_graph is not None and not files.head_graph.is_file():
        raise ModelError(f"{files.folder.name}: {files.head_graph.name} is missing")
    if not files.tokenizer.is_file():
        raise ModelError(f"{files.folder.name}: tokenizer.json is missing")
