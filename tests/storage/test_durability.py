"""What survives a killed process and a full disk."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import qwen_desktop
from qwen_desktop.storage.chats import ChatStore
from qwen_desktop.storage.errors import StorageError

REPO = Path(qwen_desktop.__file__).parent.parent

# Streams an answer the way the app does: a user message, a "streaming" assistant message, then its text
# saved again and again, each committed length printed once update_message has returned.
STREAMER = """
import sys
from qwen_desktop.storage.chats import ChatStore

store = ChatStore(sys.argv[1])
conversation = store.create_conversation()
store.add_message(conversation.id, "user", "Count for me")
answer = store.add_message(conversation.id, "assistant", "", status="streaming")
print(answer.id, flush=True)
text = ""
for i in range(1_000_000):
    text += f"{i} "
    store.update_message(answer.id, content=text)
    print(len(text), flush=True)
"""


def _counting_text(length):
    text = ""
    i = 0
    while len(text) < length:
        text += f"{i} "
        i += 1
    return text


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_process_killed_mid_answer_keeps_the_text_as_interrupted(tmp_path):
    path = tmp_path / "chats.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", STREAMER, str(path)], stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        assert child.stdout is not None
        answer_id = int(child.stdout.readline())
        reported = [int(child.stdout.readline()) for _ in range(20)]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    assert reported == sorted(reported)
    with ChatStore(path) as store:
        answer = store.get_message(answer_id)
        assert answer.status == "interrupted"
        assert len(answer.content) >= reported[-1]
        assert answer.content == _counting_text(len(answer.content))
        (conversation,) = store.list_conversations()
        assert [m.role for m in store.path(conversation.id)] == ["user", "assistant"]


def test_full_disk_raises_storage_error_and_keeps_what_was_saved(small_disk):
    path = small_disk / "chats.sqlite3"
    store = ChatStore(path)
    try:
        conversation = store.create_conversation()
        kept = store.add_message(conversation.id, "user", "saved before the disk filled up")
        answer = store.add_message(conversation.id, "assistant", "", status="streaming")
        with pytest.raises(StorageError, match="disk is full") as caught:
            for i in range(1, 100):
                store.update_message(answer.id, content="z" * (16_384 * i))
        assert "\n" not in str(caught.value)
        # The failed transaction was rolled back: the store still reads, and what was committed is intact.
        assert store.path(conversation.id)[0] == kept
        assert len(store.get_message(answer.id).content) < 256 * 1024
        with pytest.raises(StorageError, match="disk is full"):
            store.add_message(conversation.id, "user", "q" * 300_000)
        assert [m.id for m in store.path(conversation.id)] == [kept.id, answer.id]
    finally:
        store.close()
