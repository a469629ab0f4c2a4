"""One progress figure for a whole install: download, build, first load, weighted by what each phase costs.

An install runs through phases (``PHASES``): download the file, read it, run the calibration text through the
model, write the 4-bit graph, save it, write the prompt graph, save it, the output head, check the files, and
the first load. Each reports its own progress (bytes, layers, load steps); :class:`InstallProgress` turns them
into one fraction that only moves forward, the time since the start, and a time-left estimate.

Costs are seconds measured on 2 cores for Qwen2.5-Coder-0.5B-Instruct q8_0, default build
(``PHASE_SECONDS``; ``python3 benchmarks/install_phases.py MODEL.gguf`` measures them again). The
download's cost is not known in advance: it is the download's own estimate (bytes left / speed) once that
exists. The time left is the download's estimate plus the other phases' costs scaled by how fast this machine
has been so far against the measuring one (a running ratio that starts at 1 and follows the measured one as
work is done), smoothed so that it settles after the first seconds instead of jumping with every report.

Qt-free: the window feeds it events and shows :meth:`InstallProgress.state`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qwen_desktop.engine.load_phase import LoadPhase

FETCH = "fetch"
READ = "read"
CALIBRATE = "calibrate"
QUANTIZE = "quantize"
WRITE = "write"
PREFILL = "prefill"
WRITE_PREFILL = "write_prefill"
HEAD = "head"
VERIFY = "verify"
COPY = "copy"
LOAD = "load"

# Seconds per phase: benchmarks/install_phases.py on the real Qwen2.5-Coder-0.5B-Instruct q8_0 GGUF (491 MB),
# default build, 2 vCPUs of an AMD EPYC (AVX2), quiet, 12-07, main at 81877c8: 74.7 s in all (docs/models.md,
# "How long an install takes"). FETCH is only a stand-in until the download's own estimate is known; COPY (a
# folder copied as it is) was not measured: a ~1 GB copy on a local disk.
PHASE_SECONDS: dict[str, float] = {
    FETCH: 60.0,
    READ: 7.7,
    CALIBRATE: 5.4,
    QUANTIZE: 35.1,
    WRITE: 1.4,
    PREFILL: 5.6,
    WRITE_PREFILL: 1.7,
    HEAD: 14.5,
    VERIFY: 0.5,
    COPY: 5.0,
    LOAD: 2.8,
}
BUILD_PHASES = (READ, CALIBRATE, QUANTIZE, WRITE, PREFILL, WRITE_PREFILL, HEAD, VERIFY)
SETTLE_SECONDS = 2.0  # no time-left estimate before this much time has passed
PRIOR_SECONDS = 4.0  # measured work (reference seconds) that weighs as much as the prior ratio of 1
SMOOTHING = 0.3  # share of a new estimate in the time left shown
# Between reports a phase counts as done in proportion to the time it has run against the time it should
# take here (its cost times the machine's ratio so far), up to this share: a phase that reports once (the
# output head, writing a graph) moves the bar and the time left instead of holding them for many seconds.
CREEP_CAP = 0.9
LOAD_STEPS = {LoadPhase.READ_FOLDER: 0.05, LoadPhase.OPEN_GRAPHS: 0.15, LoadPhase.WARM_UP: 0.8}


def build_plan(load: bool = True) -> tuple[str, ...]:
    """The phases of building a GGUF file or a Hugging Face folder, then (``load``) the first load."""
    return BUILD_PHASES + ((LOAD,) if load else ())


def import_plan(path: Path, load: bool = True) -> tuple[str, ...]:
    """The phases of ``Registry.import_model(path)``: a build for a file or a folder of safetensors (as
    ``library.install.import_model`` decides), else a copy; then (``load``) the first load."""
    path = Path(path)
    builds = path.is_file() or (path.is_dir() and any(path.glob("*.safetensors")))
    return build_plan(load) if builds else (COPY,) + ((LOAD,) if load else ())


def download_plan(kind: str, load: bool = True) -> tuple[str, ...]:
    """The phases of ``Registry.install_from_download`` for a catalogue entry of ``kind`` ("gguf" is built,
    "onnx" is used as it is), then (``load``) the first load."""
    if kind == "gguf":
        return (FETCH, *build_plan(load))
    return (FETCH,) + ((LOAD,) if load else ())


def plan_minutes(plan: Sequence[str]) -> int:
    """Whole minutes (at least 1) the phases of ``plan`` take on the machine ``PHASE_SECONDS`` was measured
    on, a download's stand-in left out: what the window and the README say an install takes."""
    return max(1, round(sum(PHASE_SECONDS[p] for p in plan if p != FETCH) / 60))


@dataclass(frozen=True)
class ProgressState:
    """Where an install is.

    Attributes:
        fraction: 0..1 over all phases, never smaller than an earlier state's.
        phase: the phase running now (a ``PHASES`` key).
        elapsed: seconds since the first event.
        remaining: estimated seconds left; None until it can be estimated.
    """

    fraction: float
    phase: str
    elapsed: float
    remaining: float | None


class InstallProgress:
    """Combines the phases of one install into one forward-only fraction and a time-left estimate.

    Args:
        plan: the phases in the order they run (``build_plan``, ``import_plan``, ``download_plan``).
        seconds: the cost of each phase (default ``PHASE_SECONDS``).
        clock: where the time comes from (default ``time.monotonic``); tests pass their own.

    Events for a phase not in the plan, or for a phase before the current one, do not move anything back;
    a phase after the current one starts it (the ones in between count as done: a build that has no
    calibration step, say).
    """

    def __init__(
        self,
        plan: Sequence[str],
        seconds: dict[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not plan:
            raise ValueError("an install has at least one phase")
        self.plan = tuple(plan)
        costs = PHASE_SECONDS | (seconds or {})
        self.cost = {phase: max(float(costs.get(phase, 1.0)), 1e-6) for phase in self.plan}
        self.clock = clock
        self.started: float | None = None
        self.index = 0  # the phase running now
        self.done = 0.0  # fraction of the current phase
        self.best = 0.0  # the largest overall fraction reported
        self.fetch_left: float | None = None  # the download's own estimate, while it runs
        self._phase_started = 0.0
        self._work_seconds = 0.0  # wall time spent in phases other than the download, before the current one
        self._work_done = 0.0  # their cost, in reference seconds
        self._shown: float | None = None  # the time left last reported
        self._shown_at = 0.0
        self._shown_key: tuple[float, int, float] = (-1.0, -1, -1.0)
        self._last: ProgressState | None = None

    # ----------------------------------------------------------------- events

    def update(self, phase: str, fraction: float, now: float | None = None) -> ProgressState:
        """``phase`` is ``fraction`` (0..1) done. Returns the new state."""
        now = self._now(now)
        if phase in self.plan:
            index = self.plan.index(phase)
            if index > self.index:
                self._enter(index, now)
            if index == self.index:
                self.done = max(self.done, _unit(fraction))
        return self.state(now)

    def download(self, done: int, total: int, eta: float | None, now: float | None = None) -> ProgressState:
        """A download report: bytes done of ``total`` and the download's own time left (None if unknown).
        Once that estimate exists the download's cost becomes the time it has taken plus that estimate."""
        now = self._now(now)
        if FETCH in self.plan and self.plan.index(FETCH) >= self.index:
            state = self.update(FETCH, done / total if total > 0 else 0.0, now)
            if eta is not None and eta >= 0 and self.plan[self.index] == FETCH:
                self.fetch_left = float(eta)
                self.cost[FETCH] = max(now - self._phase_started + float(eta), 1e-6)
                state = self.state(now)
            return state
        return self.state(now)

    def build(self, stage: str, done: int, total: int, now: float | None = None) -> ProgressState:
        """A builder report (``convert.builder.build_model``'s ``progress(stage, done, total)``)."""
        phase, fraction = self.build_phase(stage, done, total)
        return self.update(phase, fraction, now)

    def load(self, phase: object, now: float | None = None) -> ProgressState:
        """A load report: the ``LoadPhase`` that ``ChatEngine`` began (anything else counts as its start)."""
        return self.update(LOAD, LOAD_STEPS.get(phase, 0.0) if isinstance(phase, LoadPhase) else 0.0, now)

    def finish(self, now: float | None = None) -> ProgressState:
        """Everything is done."""
        now = self._now(now)
        self._enter(len(self.plan) - 1, now)
        self.done = 1.0
        return self.state(now)

    def build_phase(self, stage: str, done: int, total: int) -> tuple[str, float]:
        """The phase and its fraction for a builder report.

        The builder reports ``reading``, ``calibration`` (layers), the decode graph's steps (``embedding``,
        ``layer i/n``, ``lm head``) and then, prefixed ``prefill graph: ``, the prompt graph's, counted over
        both graphs, ``writing`` after each graph, ``output head``, ``checksum`` and ``done``.
        """
        fraction = done / total if total > 0 else 0.0
        if stage == "writing":  # after the decode graph, or after the prefill graph
            return (WRITE_PREFILL if self.phase in (PREFILL, WRITE_PREFILL) else WRITE), 0.0
        named = {
            "reading": (READ, fraction),
            "calibration": (CALIBRATE, fraction),
            "output head": (HEAD, 0.0),
            "checksum": (VERIFY, 0.0),
            "done": (VERIFY, 1.0),
        }
        if stage in named:
            return named[stage]
        if stage.startswith("prefill graph: "):  # steps total..2*total of two graphs
            return PREFILL, max(0.0, 2 * fraction - 1)
        graphs = 2 if PREFILL in self.plan else 1  # the decode graph: steps 0..total of 1 or 2 graphs
        return QUANTIZE, fraction * graphs

    # ----------------------------------------------------------------- reading

    @property
    def phase(self) -> str:
        """The phase running now."""
        return self.plan[self.index]

    def state(self, now: float | None = None) -> ProgressState:
        """The fraction, phase, elapsed time and time left now."""
        now = self._now(now)
        elapsed = now - (self.started if self.started is not None else now)
        done = self._done_by(now)
        self.best = max(self.best, self._fraction(done))
        self._last = ProgressState(self.best, self.phase, elapsed, self._remaining(now, elapsed, done))
        return self._last

    def _fraction(self, done: float) -> float:
        total = sum(self.cost.values())
        before = sum(self.cost[p] for p in self.plan[: self.index])
        return _unit((before + self.cost[self.phase] * done) / total)

    def _ratio(self, seconds: float, work: float) -> float:
        """Measured seconds per reference second, starting from 1 (``PRIOR_SECONDS`` of prior work)."""
        return (seconds + PRIOR_SECONDS) / (work + PRIOR_SECONDS)

    def _done_by(self, now: float) -> float:
        """The current phase's fraction: its last report, or the share of its expected time that has
        passed (at most ``CREEP_CAP``) when that is more. A download goes by its bytes only."""
        if self.phase == FETCH or self.done >= 1.0:
            return self.done
        expected = self.cost[self.phase] * self._ratio(self._work_seconds, self._work_done)
        return max(self.done, min(CREEP_CAP, (now - self._phase_started) / expected))

    def _remaining(self, now: float, elapsed: float, done: float) -> float | None:
        if self.done >= 1.0 and self.index == len(self.plan) - 1:
            return 0.0
        if elapsed < SETTLE_SECONDS or self.best <= 0.0:
            return None
        phase = self.phase
        if phase == FETCH and self.fetch_left is None:
            return None
        if self._shown is not None and (now, self.index, done) == self._shown_key:
            return self._shown  # asked again with nothing new: the same answer
        # How fast this machine works against the measuring one: measured seconds per reference second over
        # the work done so far (not the download), starting from 1.
        seconds, work = self._work_seconds, self._work_done
        if phase != FETCH:
            seconds += now - self._phase_started
            work += self.cost[phase] * done
        ratio = self._ratio(seconds, work)
        later = sum(self.cost[p] for p in self.plan[self.index + 1 :] if p != FETCH) * ratio
        own = self.cost[phase] * (1.0 - done) * ratio
        current = (self.fetch_left or 0.0) if phase == FETCH else own
        estimate = max(0.0, current + later)
        if self._shown is None:
            shown = estimate
        else:
            ticking = max(0.0, self._shown - (now - self._shown_at))  # the last estimate, counted down
            shown = ticking + SMOOTHING * (estimate - ticking)
        self._shown, self._shown_at = shown, now
        self._shown_key = (now, self.index, done)
        return shown

    # ----------------------------------------------------------------- helpers

    def _now(self, now: float | None) -> float:
        now = self.clock() if now is None else now
        if self.started is None:
            self.started = now
            self._phase_started = now
        return now

    def _enter(self, index: int, now: float) -> None:
        if index <= self.index:
            return
        for phase in self.plan[self.index : index]:  # the current phase and any skipped ones are done
            if phase != FETCH:
                self._work_done += self.cost[phase]
        if self.phase != FETCH:
            self._work_seconds += now - self._phase_started
        else:
            self.fetch_left = None
        self.index = index
        self.done = 0.0
        self._phase_started = now


def _unit(value: float) -> float:
    """``value`` clamped to 0..1 (NaN counts as 0)."""
    if not value >= 0.0:  # also NaN
        return 0.0
    return min(1.0, float(value))
