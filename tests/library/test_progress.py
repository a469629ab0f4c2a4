"""One progress figure over every phase of an install (library.progress): forward only, in [0, 1], a time left
that exists only once it can be estimated and that settles."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwen_desktop.convert.builder import build_model
from qwen_desktop.engine.load_phase import LoadPhase
from qwen_desktop.library import progress as p
from qwen_desktop.library.progress import (
    PHASE_SECONDS,
    SETTLE_SECONDS,
    InstallProgress,
    build_plan,
    download_plan,
    import_plan,
    plan_minutes,
)

ALL_PHASES = list(PHASE_SECONDS)
STAGES = [
    "reading",
    "calibration",
    "embedding",
    "layer 3/24",
    "lm head",
    "writing",
    "prefill graph: embedding",
    "prefill graph: layer 7/24",
    "output head",
    "checksum",
    "done",
    "something new",
]
LOAD_PHASES = [*LoadPhase, "??", None]

plans = st.sampled_from(
    [build_plan(), build_plan(load=False), download_plan("gguf"), download_plan("onnx"), (p.COPY, p.LOAD)]
) | st.lists(st.sampled_from(ALL_PHASES), min_size=1, max_size=8, unique=True)
fractions = st.floats(allow_nan=True, allow_infinity=True) | st.floats(0, 1)
events = st.one_of(
    st.tuples(st.just("update"), st.sampled_from([*ALL_PHASES, "unknown"]), fractions),
    st.tuples(
        st.just("download"),
        st.integers(0, 10**10),
        st.integers(-1, 10**10),
        st.none() | st.floats(-10, 1e6, allow_nan=False),
    ),
    st.tuples(st.just("build"), st.sampled_from(STAGES), st.integers(-2, 60), st.integers(-1, 60)),
    st.tuples(st.just("load"), st.sampled_from(LOAD_PHASES)),
)
steps = st.lists(st.tuples(st.floats(0, 30, allow_nan=False), events), max_size=60)


def apply(progress: InstallProgress, now: float, event: tuple) -> p.ProgressState:
    kind, *args = event
    if kind == "update":
        return progress.update(args[0], args[1], now)
    if kind == "download":
        return progress.download(args[0], args[1], args[2], now)
    if kind == "build":
        return progress.build(args[0], args[1], args[2], now)
    return progress.load(args[0], now)


@settings(max_examples=400, deadline=None)
@given(plans, steps)
def test_any_sequence_of_events_only_moves_forward_and_stays_in_range(plan, sequence):
    progress = InstallProgress(plan)
    now, last = 100.0, 0.0
    for dt, event in sequence:
        now += dt
        state = apply(progress, now, event)
        assert 0.0 <= state.fraction <= 1.0
        assert state.fraction >= last
        last = state.fraction
        assert state.phase in plan
        assert state.elapsed >= 0.0
        if state.elapsed < SETTLE_SECONDS and state.fraction < 1.0:
            assert state.remaining is None
        assert state.remaining is None or (state.remaining >= 0.0 and math.isfinite(state.remaining))
    end = progress.finish(now + 1)
    assert end.fraction == 1.0 and end.remaining == 0.0 and end.phase == plan[-1]


@settings(max_examples=200, deadline=None)
@given(plans, st.lists(st.tuples(st.floats(0, 5, allow_nan=False), events), min_size=1, max_size=20))
def test_time_left_is_none_until_there_is_time_and_progress_to_go_by(plan, sequence):
    progress = InstallProgress(plan)
    first = apply(progress, 0.0, sequence[0][1])
    assert first.remaining is None or first.fraction == 1.0  # no time has passed yet
    now = 0.0
    for dt, event in sequence[1:]:
        now += dt
        state = apply(progress, now, event)
        if state.fraction == 0.0:
            assert state.remaining is None
        if state.phase == p.FETCH and progress.fetch_left is None and state.fraction < 1.0:
            assert state.remaining is None  # a download whose speed is not known yet


def test_the_bar_is_weighted_by_phase_costs():
    plan = build_plan()
    progress = InstallProgress(plan)
    total = sum(PHASE_SECONDS[x] for x in plan)
    progress.update(p.READ, 1.0, 0.0)
    assert progress.update(p.CALIBRATE, 0.0, 1.0).fraction == pytest.approx(PHASE_SECONDS[p.READ] / total)
    half = progress.update(p.QUANTIZE, 0.5, 2.0).fraction
    expected = (PHASE_SECONDS[p.READ] + PHASE_SECONDS[p.CALIBRATE] + PHASE_SECONDS[p.QUANTIZE] / 2) / total
    assert half == pytest.approx(expected)
    # a phase before the current one moves nothing back
    assert progress.update(p.READ, 0.0, 3.0).fraction == pytest.approx(expected)


def test_time_left_settles_near_the_truth_on_a_machine_twice_as_slow():
    """Phases take twice their reference cost here; after a minute the estimate is within 10% of the truth
    and it changes smoothly (no jump of more than a few seconds between reports a second apart)."""
    plan = build_plan()
    costs = {x: 2 * PHASE_SECONDS[x] for x in plan}
    true_total = sum(costs.values())
    progress = InstallProgress(plan)
    now, start, shown = 0.0, 0.0, []
    for phase in plan:
        begun = now
        while now < begun + costs[phase]:
            state = progress.update(phase, (now - begun) / costs[phase], now)
            if state.remaining is not None:
                shown.append((now, state.remaining))
            now += 1.0
    late = [(t, r) for t, r in shown if 60 <= t - start <= true_total - 60]
    assert late
    for t, remaining in late:
        truth = true_total - t
        assert abs(remaining - truth) <= 0.1 * true_total, (t, remaining, truth)
    jumps = [abs((r2 - r1) + (t2 - t1)) for (t1, r1), (t2, r2) in itertools.pairwise(late)]
    assert max(jumps) < 5.0


def test_a_phase_that_reports_once_still_moves_the_bar_and_the_time_left():
    """The output head reports only its start (many seconds on a slow machine): between reports the bar
    creeps by the time the phase should take, never past the next phase's start, and the time left counts
    down instead of standing still."""
    plan = build_plan()
    progress = InstallProgress(plan)
    head = plan.index(p.HEAD)
    start = sum(PHASE_SECONDS[x] for x in plan[:head])  # this machine as fast as the measuring one
    progress.update(p.READ, 0.0, 0.0)
    progress.update(p.HEAD, 0.0, start)
    total = sum(PHASE_SECONDS[x] for x in plan)
    end_of_head = (start + PHASE_SECONDS[p.HEAD]) / total
    seen = [progress.state(start + t) for t in range(3 * int(PHASE_SECONDS[p.HEAD]))]
    fractions = [s.fraction for s in seen]
    assert fractions == sorted(fractions) and fractions[-1] > fractions[0]
    assert fractions[-1] < end_of_head  # holds below the next phase however long the phase takes
    assert fractions[len(fractions) // 6] > fractions[0]  # and moves within its first seconds
    lefts = [s.remaining for s in seen[: int(PHASE_SECONDS[p.HEAD] * 0.8)]]
    assert lefts[-1] < lefts[0] - 0.5 * PHASE_SECONDS[p.HEAD]  # counting down while the head is fitted
    assert progress.update(p.VERIFY, 0.0, start + 40).fraction >= fractions[-1]  # then on from there


def test_the_download_cost_becomes_its_own_estimate():
    progress = InstallProgress(download_plan("gguf"))
    assert progress.download(0, 1000, None, 0.0).remaining is None
    assert progress.download(100, 1000, None, 3.0).remaining is None  # no speed yet: no estimate
    state = progress.download(200, 1000, 12.0, 4.0)
    assert progress.cost[p.FETCH] == pytest.approx(16.0)
    build_after = sum(PHASE_SECONDS[x] for x in build_plan())
    assert state.remaining == pytest.approx(12.0 + build_after)


def test_the_builders_own_reports_map_onto_the_plan_in_order(tiny_gguf, tmp_path):
    reports = []
    build_model(tiny_gguf, tmp_path / "out", progress=lambda *a: reports.append(a))
    progress = InstallProgress(build_plan(load=False))
    phases, last = [], 0.0
    for i, (stage, done, total) in enumerate(reports):
        state = progress.build(stage, done, total, float(i))
        assert state.fraction >= last
        last = state.fraction
        if not phases or phases[-1] != state.phase:
            phases.append(state.phase)
    assert phases == list(build_plan(load=False))  # every phase, in order, none skipped
    assert last == pytest.approx(1.0)


def test_the_plan_of_an_import_follows_what_will_be_done(tiny_gguf, tiny_hf, tiny_model_dir):
    assert import_plan(tiny_gguf) == build_plan()
    assert import_plan(tiny_hf) == build_plan()
    assert import_plan(tiny_model_dir) == (p.COPY, p.LOAD)
    assert import_plan(tiny_model_dir, load=False) == (p.COPY,)
    assert download_plan("onnx") == (p.FETCH, p.LOAD)


def test_plan_minutes_are_the_measured_seconds_of_the_plan_without_the_download():
    build = sum(PHASE_SECONDS[phase] for phase in build_plan())
    assert plan_minutes(build_plan()) == max(1, round(build / 60))
    assert plan_minutes(download_plan("gguf")) == plan_minutes(
        build_plan()
    )  # the download's stand-in is not counted
    assert plan_minutes((p.LOAD,)) == 1
