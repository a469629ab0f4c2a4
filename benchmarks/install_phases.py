"""Seconds per phase of an import and its first load: the costs behind the install progress bar
(``qwen_desktop.library.progress.PHASE_SECONDS``).

    python3 benchmarks/install_phases.py MODEL.gguf [--threads 0]

Imports MODEL (a GGUF file or a Hugging Face folder) into a temporary models folder the way the app does
(``Registry.import_model``, default build), timing each phase by the builder's own progress reports, then loads
the new folder once with an empty ONNX Runtime cache (the app's first load) and prints the seconds per phase.
Takes as long as a build (minutes); run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from qwen_desktop.engine.bench import machine_info
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.library.progress import LOAD, InstallProgress, import_plan
from qwen_desktop.library.registry import Registry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    plan = import_plan(args.model)
    tracker = InstallProgress(plan)
    seconds = dict.fromkeys(plan, 0.0)
    phase, since = plan[0], time.monotonic()

    def enter(new: str) -> None:
        nonlocal phase, since
        now = time.monotonic()
        seconds[phase] += now - since
        phase, since = new, now

    def on_build(stage: str, done: int, total: int) -> None:
        state = tracker.build(stage, done, total)
        if state.phase != phase:
            enter(state.phase)

    with tempfile.TemporaryDirectory(prefix="install-phases-") as tmp:
        started = time.monotonic()
        model = Registry(Path(tmp) / "models", bundled=[]).import_model(args.model, on_build=on_build)
        enter(LOAD)
        engine = ChatEngine(model.folder, threads=args.threads, cache_root=Path(tmp) / "cache")
        enter(LOAD)  # closes the load phase
        total = time.monotonic() - started
        del engine
    print(json.dumps({"machine": machine_info(), "seconds": seconds, "total": round(total, 1)}, indent=2))
    print("PHASE_SECONDS:", {k: round(v, 1) for k, v in seconds.items()})


if __name__ == "__main__":
    main()
