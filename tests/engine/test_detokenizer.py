"""Streaming text never shows a broken character, however the tokens split it."""

from __future__ import annotations

import pytest

from qwen_desktop.engine.tokenizer import ChatTokenizer, StreamingDetokenizer

TEXTS = [
    "你好，世界！今天天气很好。",
    "Emoji 😀🎉🚀🫠 mixed with café and naïve",
    "def f():\n    return '多字节 𠀀𝄞'\n",
]


def stream(tokenizer, text):
    detok = StreamingDetokenizer(tokenizer)
    pieces = [detok.add(t) for t in tokenizer.encode(text)]
    pieces.append(detok.flush())
    return pieces


@pytest.mark.parametrize("text", TEXTS)
def test_tiny_tokenizer_streams_whole_characters(tiny_model_dir, text):
    tok = ChatTokenizer(tiny_model_dir / "tokenizer.json")
    ids = tok.encode(text)
    assert len(ids) > len(text) // 2  # the tiny vocabulary splits multi-byte characters across tokens
    pieces = stream(tok, text)
    assert "".join(pieces) == text
    assert not any("\ufffd" in p for p in pieces)


def test_a_truncated_character_is_flushed_as_a_replacement(tiny_model_dir):
    tok = ChatTokenizer(tiny_model_dir / "tokenizer.json")
    ids = tok.encode("😀")
    detok = StreamingDetokenizer(tok)
    assert [detok.add(t) for t in ids[:-1]] == [""] * (len(ids) - 1)
    assert detok.flush() == "\ufffd"


@pytest.mark.real_model
@pytest.mark.parametrize("text", TEXTS)
def test_real_tokenizer_streams_chinese_and_emoji_whole(real_tokenizer_json, text):
    tok = ChatTokenizer(real_tokenizer_json)
    pieces = stream(tok, text)
    assert "".join(pieces) == text
    assert not any("\ufffd" in p for p in pieces)


@pytest.fixture(scope="module")
def real_tokenizer_json(real_gguf, tmp_path_factory):
    from qwen_desktop.convert.gguf_reader import GGUFSource

    path = tmp_path_factory.mktemp("realtok") / "tokenizer.json"
    path.write_text(GGUFSource(real_gguf).tokenizer.tokenizer_json, encoding="utf-8")
    return path
