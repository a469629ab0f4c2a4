"""Text files attached to a message: read, checked and turned into a fenced block under the file name.

A file's bytes are untrusted. ``decode_attachment`` either returns an ``Attachment`` or raises
``AttachmentError`` with one line a person can read (binary, not UTF-8, too large, empty); nothing else
escapes it, whatever the bytes. ``read_attachment`` adds what the file system can say (missing, a folder,
unreadable). No Qt here: the composer shows the refusal, the tests feed arbitrary bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from qwen_desktop.units import human_bytes

# 200 KB in human_bytes' decimal units, the figure the refusal shows: a 200 KB source file is ~50 000 tokens,
# more than most contexts hold
MAX_ATTACHMENT_BYTES = 200_000
MAX_NAME_CHARS = 120

# The suffixes the Attach dialog offers (any file that reads as UTF-8 text is taken when dropped), with the
# fence's language where it has a common one.
TEXT_SUFFIXES: dict[str, str] = {
    ".txt": "",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".py": "python",
    ".json": "json",
    ".jsonl": "json",
    ".csv": "csv",
    ".tsv": "",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".html": "html",
    ".css": "css",
    ".js": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".jsx": "jsx",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".swift": "swift",
    ".rb": "ruby",
    ".php": "php",
    ".sh": "bash",
    ".bash": "bash",
    ".sql": "sql",
    ".lua": "lua",
    ".r": "r",
    ".tex": "latex",
    ".log": "",
}

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_BACKTICKS_RE = re.compile(r"`+")
_BINARY_RE = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f\x7f]")  # not tab, newlines, form feed, escape


class AttachmentError(Exception):
    """A file cannot be attached. ``kind`` says why ("large", "empty", "binary", "encoding", "folder",
    "unreadable", "context"), ``name`` is the file's shown name, ``size``/``limit`` the figures of "large"
    (bytes) and "context" (tokens), ``detail`` the system's reason of "unreadable"; ``str()`` is one line."""

    def __init__(self, kind: str, name: str, size: int = 0, limit: int = 0, detail: str = "") -> None:
        self.kind = kind
        self.name = name
        self.size = size
        self.limit = limit
        self.detail = detail
        super().__init__(self.english())

    def english(self) -> str:
        """The reason in one English line (the composer shows it translated)."""
        over = human_bytes(self.size, round_up=True)  # one byte over the limit never reads as the limit
        texts = {
            "large": f"{self.name} is too large to attach ({over}; at most {human_bytes(self.limit)}).",
            "empty": f"{self.name} is empty.",
            "binary": f"{self.name} is not a text file (it holds binary data).",
            "encoding": f"{self.name} is not a text file (it is not UTF-8 text).",
            "folder": f"{self.name} is a folder, not a text file.",
            "unreadable": f"{self.name} cannot be read: {self.detail}.",
            "context": f"{self.name} is too long for the context ({self.size} tokens; room for {self.limit}).",
        }
        return texts.get(self.kind, f"{self.name} cannot be attached.")


@dataclass(frozen=True)
class Attachment:
    """A text file to send with the message: its (display) name and its text (UTF-8 decoded, ``\\n`` lines)."""

    name: str
    text: str

    @property
    def language(self) -> str:
        """The fence's language for the file's suffix ("" when there is none)."""
        return TEXT_SUFFIXES.get(Path(self.name).suffix.lower(), "")

    def block(self) -> str:
        """The file as it goes into the message: its name on a line, then its text in a fenced block whose
        fence is longer than any run of backticks in the text (so the text cannot close it)."""
        longest = max((len(run) for run in _BACKTICKS_RE.findall(self.text)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{self.name}\n{fence}{self.language}\n{self.text}\n{fence}"


def clean_name(name: str) -> str:
    """A file name fit to show and to put in a message: one line (control characters become spaces), at
    most ``MAX_NAME_CHARS`` characters."""
    one_line = _CONTROL_RE.sub(" ", name).strip() or "file"
    return one_line if len(one_line) <= MAX_NAME_CHARS else one_line[: MAX_NAME_CHARS - 1] + "…"


def decode_attachment(name: str, data: bytes, limit: int = MAX_ATTACHMENT_BYTES) -> Attachment:
    """``data`` as an attachment named ``name``, or ``AttachmentError`` (the only exception it raises).

    Refused: more than ``limit`` bytes, nothing but blanks, binary (a NUL byte, or more than 1 % control
    characters that text does not use), not valid UTF-8. A UTF-8 byte-order mark is dropped and line
    endings become ``\\n``.
    """
    shown = clean_name(name)
    if len(data) > limit:
        raise AttachmentError("large", shown, size=len(data), limit=limit)
    if b"\x00" in data:
        raise AttachmentError("binary", shown)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentError("encoding", shown) from None
    if len(_BINARY_RE.findall(text)) * 100 > len(text):
        raise AttachmentError("binary", shown)
    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    if not text.strip():
        raise AttachmentError("empty", shown)
    return Attachment(shown, text)


def read_attachment(path: Path, limit: int = MAX_ATTACHMENT_BYTES) -> Attachment:
    """Read ``path`` (at most ``limit`` + 1 bytes) as an attachment, or raise ``AttachmentError``."""
    shown = clean_name(path.name)
    try:
        if path.is_dir():
            raise AttachmentError("folder", shown)
        with path.open("rb") as f:
            data = f.read(limit + 1)
        size = len(data)
        if size > limit:
            size = max(size, path.stat().st_size)
    except OSError as exc:
        raise AttachmentError("unreadable", shown, detail=str(exc.strerror or exc)) from None
    if size > limit:
        raise AttachmentError("large", shown, size=size, limit=limit)
    return decode_attachment(path.name, data, limit)
