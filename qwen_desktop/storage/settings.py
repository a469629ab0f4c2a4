"""User settings: a dataclass, a forgiving loader and an atomic saver for `settings.json`."""

from __future__ import annotations

import contextlib
import json
import math
import os
import types
import typing
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from qwen_desktop.storage.errors import StorageError
from qwen_desktop.storage.files import atomic_write_bytes, move_aside, read_json
from qwen_desktop.storage.paths import settings_path

THEMES = ("light", "dark", "system")
CONTEXT_MIN = 256
CONTEXT_MAX = 131072
SEED_MAX = 2**63 - 1
MAX_PRESETS = 100  # the user's own system-prompt presets
PRESET_NAME_CHARS = 80
PRESET_PROMPT_CHARS = 32_000
PRESET_ID_CHARS = 64


@dataclass(frozen=True)
class CustomPreset:
    """A system-prompt preset the user made: a stable id (``custom-…``), the name shown, the prompt sent."""

    id: str
    name: str
    prompt: str


def _preset_entry(raw: object) -> CustomPreset | None:
    """One entry of ``presets`` from the file, or None when it is not a usable preset."""
    if not isinstance(raw, dict):
        return None
    pid, name, prompt = raw.get("id"), raw.get("name"), raw.get("prompt")
    if not (isinstance(pid, str) and isinstance(name, str) and isinstance(prompt, str)):
        return None
    if not (0 < len(pid) <= PRESET_ID_CHARS and name.strip() and len(name) <= PRESET_NAME_CHARS):
        return None
    if len(prompt) > PRESET_PROMPT_CHARS:
        return None
    try:  # a lone surrogate (possible in JSON) is not text: it cannot be saved or tokenized
        (pid + name + prompt).encode("utf-8")
    except UnicodeEncodeError:
        return None
    return CustomPreset(pid, name.strip(), prompt)


@dataclass
class Settings:
    """Everything the user can change. Values out of range are clamped by `clamped()`, on load and on save.

    Attributes:
        threads: ONNX Runtime intra-op threads; 0 means "Auto" (see `auto_threads`).
        context_limit: Most tokens of history kept in the prompt, 256..131072.
        max_tokens: Most tokens in one answer, 1..131072.
        temperature: Sampling temperature, 0..2 (0 is greedy).
        top_p: Nucleus sampling mass, 0..1.
        top_k: Keep only the k likeliest tokens; 0 turns it off.
        min_p: Drop tokens below min_p times the top probability, 0..1.
        repetition_penalty: 1..2; 1 turns it off.
        seed: Fixed sampling seed, or None for a fresh one each answer.
        system_prompt: System message for new conversations.
        theme: "light", "dark" or "system".
        model_path: The model folder in use, or None before one is chosen.
        models_dir: Where models are stored, or None for `paths.models_dir()`'s default.
        auto_threads: Thread count picked by the Auto benchmark, or None before it has run.
        language: UI language code ("zh_CN", ...) or "system".
        server_enabled: Serve the model over the local OpenAI-compatible API (docs/server.md); off by default.
        server_port: The API's port on 127.0.0.1, 1024..65535.
        server_api_key: Key the API asks for ("Authorization: Bearer ..."), or "" for none.
        presets: The user's own system-prompt presets, at most `MAX_PRESETS`, ids unique.
        preset: The preset chosen last (a built-in's id or a `CustomPreset.id`): new chats start with it.
    """

    threads: int = 0
    context_limit: int = 4096
    max_tokens: int = 1024
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    repetition_penalty: float = 1.05
    seed: int | None = None
    system_prompt: str = "You are a helpful assistant."
    theme: str = "system"
    model_path: str | None = None
    models_dir: str | None = None
    auto_threads: int | None = None
    language: str = "system"
    server_enabled: bool = False
    server_port: int = 8765
    server_api_key: str = ""
    presets: tuple[CustomPreset, ...] = ()
    preset: str = "assistant"

    def clamped(self) -> Settings:
        """A copy with every value moved into its valid range (threads up to this machine's CPU count)."""
        cpus = os.cpu_count() or 1
        return replace(
            self,
            threads=_clamp(self.threads, 0, cpus),
            context_limit=_clamp(self.context_limit, CONTEXT_MIN, CONTEXT_MAX),
            max_tokens=_clamp(self.max_tokens, 1, CONTEXT_MAX),
            temperature=_clamp(self.temperature, 0.0, 2.0),
            top_p=_clamp(self.top_p, 0.0, 1.0),
            top_k=max(self.top_k, 0),
            min_p=_clamp(self.min_p, 0.0, 1.0),
            repetition_penalty=_clamp(self.repetition_penalty, 1.0, 2.0),
            seed=None if self.seed is None else _clamp(self.seed, 0, SEED_MAX),
            theme=self.theme if self.theme in THEMES else "system",
            model_path=self.model_path or None,
            models_dir=self.models_dir or None,
            # A benchmark result from a bigger machine (settings copied over) must not exceed this one.
            auto_threads=None
            if self.auto_threads is None or self.auto_threads < 1
            else min(self.auto_threads, cpus),
            language=self.language.strip() or "system",
            server_port=_clamp(self.server_port, 1024, 65535),
            server_api_key=self.server_api_key.strip(),
            presets=_unique_presets(self.presets),
            preset=self.preset.strip()[:PRESET_ID_CHARS] or "assistant",
        )


def _unique_presets(presets: typing.Iterable[CustomPreset]) -> tuple[CustomPreset, ...]:
    """The first `MAX_PRESETS` presets, the first of each id."""
    seen: set[str] = set()
    kept: list[CustomPreset] = []
    for preset in presets:
        if preset.id not in seen and len(kept) < MAX_PRESETS:
            seen.add(preset.id)
            kept.append(preset)
    return tuple(kept)


def _clamp(value: typing.Any, low: typing.Any, high: typing.Any) -> typing.Any:
    return min(max(value, low), high)


def _field_value(hint: object, value: object) -> tuple[bool, object]:
    """Check a JSON value against a field's type hint; return (ok, value converted to the field's type)."""
    # Python 3.10's get_type_hints turns `int | None` into typing.Optional[int]; 3.11 keeps types.UnionType.
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if value is None:
        return type(None) in args, None
    base = next(a for a in args if a is not type(None))
    if isinstance(value, bool):  # bool is an int subclass; `true` is never a valid count
        return base is bool, value
    if base is int:
        return isinstance(value, int), value
    if base is float:
        try:
            number = float(value) if isinstance(value, (int, float)) else math.nan
        except OverflowError:  # an integer too large for a float
            number = math.nan
        return (True, number) if math.isfinite(number) else (False, value)
    return isinstance(value, base) if isinstance(base, type) else False, value


def _parse(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Split a settings JSON object into good values (by field name) and the names of bad fields."""
    hints = typing.get_type_hints(Settings)
    good: dict[str, Any] = {}
    bad: list[str] = []
    for field in fields(Settings):
        if field.name not in data:
            continue
        if field.name == "presets":  # a bad entry is dropped, the good ones are kept
            raw = data["presets"]
            entries = [_preset_entry(item) for item in raw] if isinstance(raw, list) else [None]
            good["presets"] = tuple(e for e in entries if e is not None)
            if None in entries:
                bad.append("presets")
            continue
        ok, value = _field_value(hints[field.name], data[field.name])
        if ok:
            good[field.name] = value
        else:
            bad.append(field.name)
    return good, bad


def load_settings(path: Path | None = None) -> tuple[Settings, str | None]:
    """Read the settings, never failing: whatever cannot be used falls back to its default.

    A missing file gives the defaults. Unknown keys are ignored (a newer version may have written them).
    Values out of range are clamped silently. A file that is not JSON, or has values of the wrong type, is
    moved aside to `settings.json.corrupt-<timestamp>`, the usable values are kept, and the repaired
    settings are written back so they survive the next start.

    Args:
        path: The settings file; `paths.settings_path()` by default.

    Returns:
        The settings, and a one-line warning for the user, or None when all was well.
    """
    path = settings_path() if path is None else Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Settings(), None
    except OSError as exc:
        return Settings(), f"Could not read the settings ({path}): {exc.strerror or exc}; using the defaults."

    data = read_json(raw)
    if isinstance(data, dict):
        good, bad = _parse(data)
        settings = Settings(**good).clamped()
        if not bad:
            return settings, None
        problem = f"Some settings had invalid values and were reset to their defaults ({', '.join(bad)})"
    else:
        settings = Settings()
        problem = "The settings file was damaged and the defaults are used"

    try:
        aside = move_aside(path)
    except OSError as exc:
        # Leave the file alone rather than overwrite what could not be saved elsewhere.
        return settings, f"{problem}; the damaged file could not be moved aside ({exc.strerror or exc})."
    # If this fails the next successful save writes them; the warning below is still true.
    with contextlib.suppress(StorageError):
        save_settings(settings, path)
    return settings, f"{problem}; the old file was kept as {aside.name}."


def save_settings(settings: Settings, path: Path | None = None) -> None:
    """Write the settings (clamped) atomically: after a crash or a full disk the old file is intact.

    Args:
        settings: What to save.
        path: The settings file; `paths.settings_path()` by default.

    Raises:
        StorageError: The file cannot be written; the message says why (for example that the disk is full).
    """
    path = settings_path() if path is None else Path(path)
    text = json.dumps(asdict(settings.clamped()), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), what="save the settings to")
