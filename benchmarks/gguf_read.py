"""Opening a GGUF and reading all its metadata: our parser against the gguf package, paired in one process.

    python3 benchmarks/gguf_read.py MODEL.gguf [--rounds 5]

Each round times, one after the other, ``convert.gguf_format.read_gguf`` (ours), the gguf package's
``GGUFReader`` over a plain array view of its memory map (what the builder read through before ours), and
the stock ``GGUFReader``, each opening the file and calling ``contents()`` on every field. Prints the
medians over the rounds and their ratios (a shared machine moves the seconds; the ratios hold better).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gguf
import numpy as np

from qwen_desktop.convert.gguf_format import read_gguf
from qwen_desktop.engine.bench import machine_info


class PlainViewReader(gguf.GGUFReader):
    """The reader the builder used before convert/gguf_format.py: views of an ndarray, not of an np.memmap."""

    @property  # type: ignore[override]
    def data(self) -> np.ndarray:
        return self._plain_data

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._plain_data = np.asarray(value)


def read_all(open_file: Callable[[str], Any], path: str) -> float:
    start = time.perf_counter()
    reader = open_file(path)
    for field in reader.fields.values():
        field.contents()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    path = str(args.model)
    readers: dict[str, Callable[[str], Any]] = {
        "ours": lambda p: read_gguf(Path(p)),
        "package, plain views (before)": lambda p: PlainViewReader(p, "r"),
        "package": lambda p: gguf.GGUFReader(p, "r"),
    }
    seconds: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(args.rounds):
        for name, open_file in readers.items():
            seconds[name].append(read_all(open_file, path))
    info = machine_info()
    print(f"{args.model.name}, {args.rounds} rounds, {info['cpu']}, {info['cpus']} CPUs")
    ours = statistics.median(seconds["ours"])
    for name, times in seconds.items():
        median = statistics.median(times)
        print(
            f"  {name:32s} median {median:6.2f} s  ({median / ours:5.1f}x ours)  rounds: "
            + " ".join(f"{t:.2f}" for t in times)
        )


if __name__ == "__main__":
    main()
