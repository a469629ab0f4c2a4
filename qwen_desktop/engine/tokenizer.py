"""The model's tokenizer, and a streaming detokenizer that never emits half a character."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

# Each call tokenizes one text: the library's thread pool would add nothing, and once used it makes every
# later fork (a subprocess) print a warning.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Tokenizer

from qwen_desktop.engine.errors import ModelError


class ChatTokenizer:
    """Byte-level BPE tokenizer loaded from a ``tokenizer.json``.

    Special tokens (``<|im_start|>``, ``<|im_end|>``, ...) are written by the chat template, never by the
    people and programs whose text fills it: ``encode_text`` reads their strings as plain text, and only
    ``encode`` (for text the app or the template wrote) turns them into their ids.
    """

    def __init__(self, path: Path) -> None:
        try:
            self._tok = Tokenizer.from_file(str(path))
        except FileNotFoundError:
            raise ModelError(f"{path.parent.name}: tokenizer.json is missing") from None
        except Exception as exc:  # tokenizers raises a plain Exception on bad JSON
            raise ModelError(f"{path.parent.name}: tokenizer.json cannot be read ({exc})") from None
        self.vocab_size = self._tok.get_vocab_size(with_added_tokens=True)
        # The tokenizer itself never parses special tokens; encode() finds them (the same ones) itself.
        self._tok.encode_special_tokens = True
        self.special_ids: dict[str, int] = {
            added.content: int(tid)
            for tid, added in self._tok.get_added_tokens_decoder().items()
            if added.special and added.content
        }
        names = sorted(self.special_ids, key=len, reverse=True)
        self._special = re.compile("|".join(map(re.escape, names))) if names else None

    def encode(self, text: str) -> list[int]:
        """Token ids of trusted ``text``: special-token strings in it (``<|im_start|>``) become their ids."""
        ids: list[int] = []
        for piece, special in self.split_special(text):
            ids += [self.special_ids[piece]] if special else self.encode_text(piece)
        return ids

    def encode_text(self, text: str) -> list[int]:
        """Token ids of untrusted ``text``: a special-token string in it is read as the characters it is.

        ``encode_batch`` of one text gives the ids ``encode`` gives, but releases the GIL while it works, so
        counting a long chat on another thread leaves the GUI thread free (``encode`` holds it throughout).
        """
        return list(self._tok.encode_batch([text], add_special_tokens=False)[0].ids) if text else []

    def split_special(self, text: str) -> list[tuple[str, bool]]:
        """``text`` as pieces, each a special-token string (True) or the text between them (False)."""
        if self._special is None:
            return [(text, False)] if text else []
        pieces: list[tuple[str, bool]] = []
        at = 0
        for match in self._special.finditer(text):
            if match.start() > at:
                pieces.append((text[at : match.start()], False))
            pieces.append((match.group(), True))
            at = match.end()
        if at < len(text):
            pieces.append((text[at:], False))
        return pieces

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def token_id(self, token: str) -> int | None:
        tid = self._tok.token_to_id(token)
        return None if tid is None else int(tid)

    def count(self, text: str) -> int:
        """How many tokens untrusted ``text`` is (as ``encode_text`` reads it)."""
        return len(self.encode_text(text))


class StreamingDetokenizer:
    """Turns a stream of token ids into text pieces, holding back bytes of an unfinished UTF-8 character.

    Byte-level BPE splits a Chinese character or an emoji across tokens; decoding such a token alone gives
    U+FFFD. Each ``add`` decodes only the tokens since the last emitted piece (a short window), so the work
    per token stays constant however long the answer grows.
    """

    def __init__(self, tokenizer: ChatTokenizer) -> None:
        self._tokenizer = tokenizer
        self._tokens: list[int] = []
        self._prefix = 0  # start of the window re-decoded for context
        self._read = 0  # tokens up to here have been emitted as text
        self.text = ""

    def add(self, token: int) -> str:
        """Add one token; return the new complete text (often empty while a character is unfinished)."""
        self._tokens.append(token)
        window = self._tokens[self._prefix :]
        before = self._tokenizer.decode(self._tokens[self._prefix : self._read])
        now = self._tokenizer.decode(window)
        if len(now) > len(before) and not now.endswith("\ufffd"):
            piece = now[len(before) :]
            self._prefix = self._read
            self._read = len(self._tokens)
            self.text += piece
            return piece
        return ""

    def flush(self) -> str:
        """Whatever is left at the end of a stream (an unfinished character becomes U+FFFD)."""
        before = self._tokenizer.decode(self._tokens[self._prefix : self._read])
        now = self._tokenizer.decode(self._tokens[self._prefix :])
        piece = now[len(before) :]
        self._prefix = self._read = len(self._tokens)
        self.text += piece
        return piece
