"""The attachment reader: untrusted bytes become text in a fence, or one line of refusal, never anything else."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qwen_desktop.ui.attachments import (
    MAX_ATTACHMENT_BYTES,
    Attachment,
    AttachmentError,
    clean_name,
    decode_attachment,
    read_attachment,
)
from qwen_desktop.units import human_bytes

EXAMPLES = int(os.environ.get("QWEN_FUZZ_EXAMPLES", "300"))


def value(text: str) -> float:
    """The bytes a ``human_bytes`` text stands for."""
    number, unit = text.split()
    return float(number) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


def test_a_text_file_is_read_as_utf8_with_its_lines():
    a = decode_attachment("notes.md", "\ufeff# 标题\r\nline two\r\n\r\n".encode())
    assert a == Attachment("notes.md", "# 标题\nline two")
    assert a.block() == "notes.md\n```markdown\n# 标题\nline two\n```"


def test_the_fence_is_longer_than_any_backticks_inside():
    a = decode_attachment("a.py", b"x = '```'\ny = '`````'\n")
    block = a.block()
    assert block.splitlines()[1] == "``````python" and block.endswith("\n``````")


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "empty"),
        (b" \n\t\n", "empty"),
        (b"PK\x03\x04\x00\x00", "binary"),
        (b"text\x00more", "binary"),
        (b"\xff\xfe\x00a\x00b", "binary"),
        (b"caf\xe9", "encoding"),
        (b"\xed\xa0\x80", "encoding"),  # an encoded surrogate is not UTF-8
        (bytes(range(1, 9)) * 20, "binary"),
        (b"a" * (MAX_ATTACHMENT_BYTES + 1), "large"),
    ],
)
def test_refusals_say_why_in_one_line(data, kind):
    with pytest.raises(AttachmentError) as refused:
        decode_attachment("f.txt", data)
    assert refused.value.kind == kind
    assert "\n" not in str(refused.value) and str(refused.value).startswith("f.txt ")


def test_a_file_at_the_limit_is_taken_and_one_byte_more_is_not(tmp_path):
    ok = tmp_path / "ok.txt"
    ok.write_bytes(b"a" * MAX_ATTACHMENT_BYTES)
    assert len(read_attachment(ok).text) == MAX_ATTACHMENT_BYTES
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * (MAX_ATTACHMENT_BYTES + 1))
    with pytest.raises(AttachmentError, match=r"too large to attach \(201 KB; at most 200 KB\)") as refused:
        read_attachment(big)
    assert refused.value.size == MAX_ATTACHMENT_BYTES + 1


def test_the_limit_reads_in_the_units_the_app_shows_every_size_in():
    assert human_bytes(MAX_ATTACHMENT_BYTES) == "200 KB"  # the figure the docs and the refusal give
    assert "over 200 KB" in (Path(__file__).parents[2] / "docs" / "app.md").read_text(encoding="utf-8")


@given(st.integers(1, 999), st.integers(0, 7), st.integers(min_value=1, max_value=10**10))
def test_a_refused_size_never_reads_as_the_limit_or_less(figure, zeros, over):
    limit = figure * 10**zeros
    assume(value(human_bytes(limit)) == limit)  # a round limit, shown exactly, like MAX_ATTACHMENT_BYTES
    shown = AttachmentError("large", "f.txt", size=limit + over, limit=limit).english()
    size_shown, limit_shown = re.fullmatch(
        r"f\.txt is too large to attach \((.+); at most (.+)\)\.", shown
    ).groups()
    assert limit_shown == human_bytes(limit) and value(size_shown) > limit


def test_the_file_system_refusals(tmp_path):
    with pytest.raises(AttachmentError) as refused:
        read_attachment(tmp_path)
    assert refused.value.kind == "folder"
    with pytest.raises(AttachmentError) as refused:
        read_attachment(tmp_path / "gone.txt")
    assert refused.value.kind == "unreadable" and "No such file" in str(refused.value)


def test_names_are_one_line_and_bounded():
    assert clean_name("a\nb\x00c.txt") == "a b c.txt"
    assert clean_name("") == "file"
    assert len(clean_name("x" * 500)) == 120


@settings(max_examples=EXAMPLES, deadline=None)
@given(name=st.text(max_size=300), data=st.binary(max_size=4096))
def test_any_bytes_give_an_attachment_or_the_refusal(name, data):
    try:
        a = decode_attachment(name, data, limit=2048)
    except AttachmentError as refusal:
        assert refusal.kind in ("large", "empty", "binary", "encoding")
        assert "\n" not in str(refusal)
        return
    assert len(data) <= 2048 and b"\x00" not in data
    assert a.text.strip() and "\r" not in a.text and "\x00" not in a.text
    assert "\n" not in a.name and 0 < len(a.name) <= 120
    a.text.encode("utf-8")  # no lone surrogate: the store and the tokenizer take it
    lines = a.block().split("\n")
    fence = lines[1].rstrip("abcdefghijklmnopqrstuvwxyz")
    assert lines[-1] == fence and fence not in a.text  # the text cannot close its fence


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.text(min_size=1, max_size=2000).filter(lambda t: t.strip()))
def test_text_comes_back_as_it_was_apart_from_line_endings(text):
    data = text.encode("utf-8", "surrogatepass")
    try:
        a = decode_attachment("t.txt", data)
    except AttachmentError as refusal:
        assert refusal.kind in ("encoding", "binary", "empty")  # surrogates; control characters; blank lines
        return
    expected = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    assert a.text == expected
