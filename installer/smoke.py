"""Smoke test of a frozen ``qwen-desktop`` executable: version, tiny model, one headless answer, the window
(offscreen, and on X11 under Xvfb when it is installed).

Used by ``installer/build.py`` (on dist/ and on the installed .deb) and by ``tests/packaging/test_frozen.py``.
Every run gets a fresh ``QWEN_DESKTOP_HOME`` so nothing touches the user's settings, chats or models.

    python installer/smoke.py dist/qwen-desktop/qwen-desktop
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
SMOKE_ENV = "QWEN_DESKTOP_SMOKE_QUIT_MS"  # honoured by installer/entry.py, the frozen entry point
SMOKE_MARK = "qwen-desktop-smoke: window shown:"
# Lines on stderr that mean something went wrong in a Qt app that otherwise exits 0.
BAD_STDERR = (
    "Traceback",
    "Error",
    "error:",
    "QObject::",
    "QThread:",
    "Cannot ",
    "Could not",
    "Failed",
    "qt.qpa",
)
# Harmless notes of Qt's offscreen platform plugin (it has no window manager to talk to).
OFFSCREEN_NOISE = ("This plugin does not support",)


T = TypeVar("T")


class SmokeError(RuntimeError):
    """A smoke check failed; the message has the command, exit status and output."""


@dataclass
class SmokeReport:
    """What the smoke test measured.

    Attributes:
        version: the ``--version`` line.
        answer: the headless chat's answer to "hi".
        window_seconds: exec -> main window shown (offscreen), one entry per run, in order.
        seconds: wall time of each check, by name.
    """

    version: str = ""
    answer: str = ""
    window_seconds: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        """A few lines for a terminal or a log."""
        lines = [f"version: {self.version}", f"answer to 'hi': {self.answer!r}"]
        if self.window_seconds:
            runs = ", ".join(f"{s:.2f}" for s in self.window_seconds)
            lines.append(
                f"window shown after {runs} s (first {self.window_seconds[0]:.2f} s, "
                f"median {statistics.median(self.window_seconds):.2f} s)"
            )
        lines += [f"{name}: {s:.1f} s" for name, s in self.seconds.items()]
        return "\n".join(lines)


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for the frozen app: a private data folder, offscreen Qt, no Python settings leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "QT_", "QWEN_DESKTOP_"))}
    env.update(QWEN_DESKTOP_HOME=str(home), QT_QPA_PLATFORM="offscreen", **extra)
    return env


def run(cmd: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; raise SmokeError unless it exits 0."""
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SmokeError(f"{' '.join(cmd)}: no exit after {timeout:.0f} s") from None
    except OSError as exc:
        raise SmokeError(f"{' '.join(cmd)}: cannot start: {exc}") from None
    if done.returncode != 0:
        raise SmokeError(
            f"{' '.join(cmd)}: exit status {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        )
    return done


def check_version(exe: Path, env: dict[str, str]) -> str:
    """``qwen-desktop --version`` prints the package's version."""
    sys.path.insert(0, str(ROOT))
    from qwen_desktop import __version__

    line = run([str(exe), "--version"], env).stdout.strip()
    if line != f"qwen-desktop {__version__}":
        raise SmokeError(f"--version printed {line!r}, expected 'qwen-desktop {__version__}'")
    return line


def build_tiny_model(exe: Path, env: dict[str, str], work: Path) -> Path:
    """``make-tiny-model`` then ``build-model`` (the ONNX writer, onnx and gguf inside the bundle)."""
    gguf = work / "tiny.gguf"
    folder = work / "tiny-model"
    run([str(exe), "make-tiny-model", str(gguf)], env)
    run([str(exe), "build-model", str(gguf), str(folder)], env)
    if not (folder / "manifest.json").is_file():
        raise SmokeError(f"build-model left no manifest.json in {folder}")
    return folder


def check_chat(exe: Path, env: dict[str, str], model: Path | None) -> str:
    """One greedy answer through ONNX Runtime and tokenizers; a tiny random model answers nonsense, but answers.
    ``model`` None: the app's own choice (the user's default, else a model that came with the app)."""
    cmd = [str(exe), "chat", *(["--model", str(model)] if model else [])]
    cmd += ["--prompt", "hi", "--temperature", "0", "--max-tokens", "8"]
    answer = run(cmd, env).stdout.strip()
    if not answer:
        raise SmokeError(f"{' '.join(cmd)}: empty answer")
    return answer


def check_bundled_first_run(exe: Path, work: Path) -> str:
    """A build with a model inside (``models/`` beside ``exe``) on a clean data folder: the first ``chat``
    answers with that model, ``models`` lists it as included, nothing was imported, and the window opens on it
    (loading it on the worker thread) and closes cleanly. Returns the answer."""
    env = clean_env(work / "home-bundled")
    answer = check_chat(exe, env, None)
    listing = run([str(exe), "models"], env).stdout
    if "included with the app" not in listing:
        raise SmokeError(f"`qwen-desktop models` does not list the bundled model:\n{listing}")
    user_models = work / "home-bundled" / "models"
    imported = [p.name for p in user_models.iterdir() if p.is_dir()] if user_models.is_dir() else []
    if imported:
        raise SmokeError(f"the first run copied models into the data folder: {imported}")
    check_window(exe, env, quit_after_ms=1500)
    return answer


def check_window(
    exe: Path | list[str], env: dict[str, str], quit_after_ms: int = 300, timeout: float = 60
) -> float:
    """Open the main window offscreen, let it close itself, check a clean exit; return seconds to shown.

    The time runs from starting the process to the main window's first paint, as reported by
    installer/entry.py's smoke switch (``QWEN_DESKTOP_SMOKE_QUIT_MS``). ``exe`` may also be a whole command
    (``[python, "installer/entry.py"]`` times the app from source).
    """
    cmd = [str(exe)] if isinstance(exe, Path) else exe
    env = {**env, SMOKE_ENV: str(quit_after_ms)}
    start = time.perf_counter()
    shown: float | None = None
    lines: list[str] = []
    deadline = start + timeout
    with subprocess.Popen(
        cmd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:  # ends when the process closes stderr (exits)
            lines.append(line.rstrip("\n"))
            if shown is None and line.startswith(SMOKE_MARK):
                shown = time.perf_counter() - start
            if time.perf_counter() > deadline:
                break
        try:
            status = proc.wait(timeout=max(1.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            proc.kill()
            raise SmokeError(
                f"the window did not close within {timeout:.0f} s; stderr:\n" + "\n".join(lines)
            ) from None
    stderr = "\n".join(lines)
    if status != 0:
        raise SmokeError(f"the app exited with status {status}; stderr:\n{stderr}")
    if shown is None:
        raise SmokeError(f"the app exited without showing its window; stderr:\n{stderr}")
    if "Qwen Desktop" not in stderr:
        raise SmokeError(f"the shown window is not the main window; stderr:\n{stderr}")
    bad = [
        line
        for line in lines
        if any(mark in line for mark in BAD_STDERR) and not any(n in line for n in OFFSCREEN_NOISE)
    ]
    if bad:
        raise SmokeError("the app wrote errors on stderr:\n" + "\n".join(bad))
    return shown


def check_window_x11(exe: Path, env: dict[str, str]) -> float | None:
    """``check_window`` on a real X server (Xvfb) with Qt's xcb plugin: the bundled xcb libraries load.

    Returns None (nothing checked) when Xvfb is not installed.
    """
    if shutil.which("Xvfb") is None:
        return None
    read_fd, write_fd = os.pipe()
    with subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as xvfb:
        os.close(write_fd)
        with os.fdopen(read_fd) as display_pipe:
            display = display_pipe.readline().strip()  # Xvfb writes its display number once it is ready
        try:
            if not display:
                raise SmokeError("Xvfb did not start")
            return check_window(exe, {**env, "QT_QPA_PLATFORM": "xcb", "DISPLAY": f":{display}"})
        finally:
            xvfb.terminate()
            xvfb.wait(timeout=10)


def smoke_test(
    exe: Path, window_runs: int = 3, log: Callable[[str], None] = print, work: Path | None = None
) -> SmokeReport:
    """Run every check on ``exe``; raise SmokeError at the first failure.

    Args:
        exe: the frozen ``qwen-desktop`` executable.
        window_runs: how many times to open the window on an empty data folder (the first is the coldest).
        log: where progress lines go.
        work: a scratch folder (default: a new temporary one, deleted afterwards).
    """
    if work is None:
        with tempfile.TemporaryDirectory(prefix="qwen-desktop-smoke-") as tmp:
            return smoke_test(exe, window_runs, log, Path(tmp))
    report = SmokeReport()
    env = clean_env(work / "home")

    def timed(name: str, check: Callable[[], T]) -> T:
        log(f"smoke: {name} ...")
        start = time.perf_counter()
        result = check()
        report.seconds[name] = time.perf_counter() - start
        return result

    report.version = timed("version", lambda: check_version(exe, env))
    for i in range(window_runs):
        fresh = clean_env(work / f"home-window-{i}")  # no model: the welcome page
        report.window_seconds.append(timed(f"window {i + 1}", lambda: check_window(exe, fresh)))  # noqa: B023 - called at once
    if shutil.which("Xvfb"):
        timed("window on X11 (Xvfb, xcb)", lambda: check_window_x11(exe, clean_env(work / "home-x11")))
    model = timed("make + build tiny model", lambda: build_tiny_model(exe, env, work))
    report.answer = timed("chat", lambda: check_chat(exe, env, model))
    # The window again, now with the tiny model installed as the default: it loads it with ONNX Runtime on
    # the worker thread and must still close cleanly.
    timed("import tiny model", lambda: run([str(exe), "import", str(model), "--name", "tiny"], env))
    timed("window with model", lambda: check_window(exe, env, quit_after_ms=1500))
    return report


def compare_startup(exe: Path, runs: int, log: Callable[[str], None] = print) -> dict[str, list[float]]:
    """Time exec -> main window painted, frozen vs from source, alternating runs; empty data folder each time."""
    commands: dict[str, Path | list[str]] = {
        "frozen": exe,
        "source": [sys.executable, str(ROOT / "installer" / "entry.py")],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="qwen-desktop-startup-") as tmp:
        for i in range(runs):
            for name, cmd in commands.items():
                env = clean_env(Path(tmp) / f"{name}-{i}")
                if name == "source":
                    env["PYTHONPATH"] = str(ROOT)
                times[name].append(check_window(cmd, env, quit_after_ms=100))
                log(f"{name} run {i + 1}: {times[name][-1]:.2f} s")
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description="Smoke-test a frozen qwen-desktop executable.")
    parser.add_argument("exe", type=Path, help="e.g. dist/qwen-desktop/qwen-desktop")
    parser.add_argument("--window-runs", type=int, default=3, help="window openings to time (default 3)")
    parser.add_argument(
        "--startup",
        type=int,
        metavar="RUNS",
        help="only time the window, frozen vs from source, RUNS times each (alternating)",
    )
    args = parser.parse_args()
    if args.startup:
        times = compare_startup(args.exe.resolve(), args.startup)
        for name, values in times.items():
            print(
                f"{name}: median {statistics.median(values):.2f} s, min {min(values):.2f} s ({len(values)} runs)"
            )
        return 0
    try:
        report = smoke_test(args.exe.resolve(), args.window_runs)
    except SmokeError as exc:
        print(f"smoke test FAILED: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
