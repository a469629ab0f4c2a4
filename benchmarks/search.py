"""How long `ChatStore.search` takes on a chat history of 10,000 messages (target: 50 ms or less).

    python3 benchmarks/search.py [--messages 10000] [--rounds 9]

Builds a temporary database of conversations in mixed English and Chinese (questions of 10-40 words,
answers of 40-250, some with code), then times a few kinds of query with a limit of 50 hits (the sidebar
asks for 200), on the trigram index and on the LIKE scan the store falls back to (one- and two-character queries, or an
SQLite without FTS5). Each figure is the median of the rounds, a round being one search after a warm-up.
Also reports the database size and how long rebuilding the index takes (what an upgrade from schema 1
does once).
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from qwen_desktop.storage.chats import ChatStore


def words(text: str) -> list[str]:
    return text.split()


ENGLISH = words(
    "the model answer question python function error file data memory context token thread window "
    "settings install download convert build quick simple example explain please could would should "
    "because however first second then finally result value list string number return import class "
    "method variable loop test debug performance speed faster slower cache disk network server client "
    "request response database query index table column row search export import chat history message "
    "user assistant system prompt language translate summary article paragraph sentence word travel "
    "weather recipe bread coffee music movie book story idea plan project meeting email schedule"
)
CHINESE = words(
    "机器学习 人工智能 模型 问题 回答 这个 那个 因为 所以 但是 如果 我们 你们 他们 今天 明天 天气 很好 "
    "翻译 中文 英文 代码 函数 错误 文件 数据 内存 速度 更快 缓存 数据库 搜索 导出 导入 聊天 记录 消息 "
    "用户 助手 系统 提示 语言 总结 文章 段落 句子 旅行 食谱 咖啡 音乐 电影 书籍 故事 想法 计划 项目 会议 的 是 了 在"
)
CODE = "```python\ndef handle(items):\n    return [item.strip() for item in items if item]\n```"


def sentence(rng: random.Random, words: int) -> str:
    kind = rng.random()
    if kind < 0.6:
        text = " ".join(rng.choice(ENGLISH) for _ in range(words))
        return text[0].upper() + text[1:] + "."
    if kind < 0.9:
        return "".join(rng.choice(CHINESE) for _ in range(words)) + "。"
    half = words // 2
    return " ".join(rng.choice(ENGLISH) for _ in range(half)) + " " + "".join(rng.sample(CHINESE, 3)) + "."


def message_text(rng: random.Random, role: str) -> str:
    words = rng.randint(10, 40) if role == "user" else rng.randint(40, 250)
    parts: list[str] = []
    while words > 0:
        n = min(words, rng.randint(6, 18))
        parts.append(sentence(rng, n))
        words -= n
    if role == "assistant" and rng.random() < 0.15:
        parts.append(CODE)
    return " ".join(parts)


def build(path: Path, messages: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with ChatStore(path) as store:
        store._conn.execute("PRAGMA synchronous = OFF")  # a throwaway file: no fsync per message
        written = 0
        while written < messages:
            conversation = store.create_conversation(f"Chat {written // 20}")
            for turn in range(min(20, messages - written)):
                role = "user" if turn % 2 == 0 else "assistant"
                text = message_text(rng, role)
                if rng.random() < 0.002:
                    text += " Feed the sourdough starter twice a day."
                store.add_message(conversation.id, role, text)  # type: ignore[arg-type]
                written += 1


QUERIES = [
    ("common English word", "model"),
    ("rare English phrase", "sourdough starter"),
    ("English, no hit", "zebra crossing"),
    ("Chinese, 4 characters", "机器学习"),
    ("Chinese, 2 characters", "天气"),
    ("one character", "的"),
    ("long phrase (30 chars)", "return [item.strip() for item"),
]


def timed(store: ChatStore, query: str, rounds: int) -> tuple[float, int]:
    hits = len(store.search(query))  # warm-up
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        store.search(query)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000, hits


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chats.sqlite3"
        began = time.perf_counter()
        build(path, args.messages)
        built = time.perf_counter() - began
        with ChatStore(path, full_text=False):  # drops the triggers ...
            pass
        began = time.perf_counter()
        with ChatStore(path) as store:  # ... so this open rebuilds the index, as an upgrade does
            rebuilt = time.perf_counter() - began
            chars = store._query("SELECT sum(length(content)) FROM messages")[0][0]
            rows = [(label, query, *timed(store, query, args.rounds)) for label, query in QUERIES]
        size = path.stat().st_size
        with ChatStore(path, full_text=False) as scan:
            like = [timed(scan, query, args.rounds)[0] for _, query in QUERIES]
    print(f"{args.messages} messages ({chars / 1e6:.1f} M characters) built in {built:.1f} s; {cpu_name()}")
    print(f"database {size / 1e6:.1f} MB with the index; index rebuilt in {rebuilt * 1000:.0f} ms")
    print(f"median of {args.rounds} searches, limit 50\n")
    print("| query | text | hits | trigram index ms | LIKE scan ms |\n|---|---|---:|---:|---:|")
    for (label, query, ms, hits), like_ms in zip(rows, like, strict=True):
        path_note = " (LIKE)" if len(query) < 3 else ""
        print(f"| {label}{path_note} | `{query}` | {hits} | {ms:.1f} | {like_ms:.1f} |")


if __name__ == "__main__":
    main()
