"""The worker thread bridge on its own: real engine, real tiny model, real QThread."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from qwen_desktop.engine.generate import SamplingParams, common_prefix
from qwen_desktop.worker import EngineBridge

GREEDY_LONG = SamplingParams(temperature=0.0, max_tokens=400)


@pytest.fixture
def bridge(qtbot, home, tiny_model_dir):
    b = EngineBridge()
    with qtbot.waitSignal(b.loaded, timeout=60000):
        b.load(tiny_model_dir, 1, 1024)
    yield b
    assert b.shutdown()
    b.deleteLater()


def test_answer_streams_in_order(qtbot, bridge):
    pieces = []
    results = []
    bridge.piece.connect(lambda _job, text, _n: pieces.append(text))
    bridge.finished.connect(results.append)
    b = bridge
    with qtbot.waitSignals([b.started, b.first_token, b.piece], order="strict", timeout=30000):
        bridge.answer([{"role": "user", "content": "Hello"}], GREEDY_LONG, None)
    qtbot.waitUntil(lambda: bool(results), timeout=30000)
    assert len(pieces) > 1, "the answer should arrive in several pieces"
    assert "".join(pieces) == results[0].text
    assert not bridge.busy


def test_finished_carries_the_whole_text_and_stats(qtbot, bridge):
    pieces = []
    bridge.piece.connect(lambda _job, text, _n: pieces.append(text))
    with qtbot.waitSignal(bridge.finished, timeout=30000) as blocker:
        job = bridge.answer(
            [{"role": "user", "content": "Tell me"}], SamplingParams(temperature=0.0, max_tokens=40), None
        )
    result = blocker.args[0]
    assert result.job_id == job
    assert result.reason == "length"
    assert result.stats.generated_tokens == 40
    assert "".join(pieces) == result.text and result.text


def test_cancel_ends_the_answer_within_one_decode_step(qtbot, bridge):
    seen = {}

    def on_piece(_job, _text, tokens):  # runs on the worker thread (direct connection)
        if tokens >= 5 and "at" not in seen:
            seen["at"] = tokens
            bridge.cancel()

    bridge.worker.piece.connect(on_piece, Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(bridge.finished, timeout=30000) as blocker:
        bridge.answer([{"role": "user", "content": "Go on"}], GREEDY_LONG, None)
    result = blocker.args[0]
    assert result.reason == "cancelled"
    assert result.stats.generated_tokens - seen["at"] <= 1
    assert not bridge.worker.cancel_event.is_set(), "the next answer must not start cancelled"


def test_thread_change_rebuilds_the_onnx_session(qtbot, bridge):
    engine = bridge.engine
    old_session = engine.model.session
    assert engine.model.threads == 1
    with qtbot.waitSignal(bridge.reconfigured, timeout=60000) as blocker:
        bridge.reconfigure(2, 1024)
    assert blocker.args[0].threads == 2
    assert engine.model.threads == 2
    assert engine.model.session is not old_session
    assert engine.model.session.get_session_options().intra_op_num_threads == 2


def test_thread_sweep_measures_each_count(qtbot, bridge, tiny_model_dir):
    with qtbot.waitSignal(bridge.sweep_done, timeout=120000) as blocker:
        bridge.sweep(tiny_model_dir, [1, 2])
    speeds = blocker.args[0]
    assert sorted(speeds) == [1, 2]
    assert all(v > 0 for v in speeds.values())


def test_missing_model_folder_reports_one_line(qtbot, home, tmp_path):
    b = EngineBridge()
    try:
        with qtbot.waitSignal(b.load_failed, timeout=30000) as blocker:
            b.load(tmp_path / "gone", 1, 1024)
        assert "gone" in blocker.args[0] and "\n" not in blocker.args[0]
        assert b.engine is None
    finally:
        assert b.shutdown()


def test_every_worker_signal_reaches_the_gui_thread_through_the_bridge(qtbot, home):
    # the signals are declared once (EngineSignals); the bridge must repeat each one, on the GUI thread
    from qwen_desktop.worker import FORWARDED, EngineSignals, emit, signal_names

    b = EngineBridge()
    try:
        assert signal_names(EngineSignals) == FORWARDED and "finished" in FORWARDED and "planned" in FORWARDED
        assert "destroyed" not in FORWARDED
        arrived: dict[str, str] = {}
        for name in FORWARDED:
            getattr(b, name).connect(
                lambda *_args, name=name: arrived.setdefault(name, threading.current_thread().name)
            )
        samples = {str: "x", int: 1, float: 0.5, bool: True, object: None}
        signatures = {name: sig for name, sig in vars(EngineSignals).items() if name in FORWARDED}

        def fire() -> None:
            for name, signal in signatures.items():
                types = signal_types(signal)
                emit(getattr(b.worker, name), *[samples[t] for t in types])

        thread = threading.Thread(target=fire, name="some-worker")
        thread.start()
        thread.join()
        qtbot.waitUntil(lambda: len(arrived) == len(FORWARDED), timeout=10000)
        assert set(arrived.values()) == {threading.main_thread().name}
    finally:
        assert b.shutdown()


def signal_types(signal) -> list[type]:
    """The argument types a PySide6 class-level Signal was declared with (``str(signal)`` is its
    signature, e.g. ``piece(int,QString,int)``)."""
    names = {"QString": str, "int": int, "double": float, "bool": bool, "PyObject": object}
    sig = str(signal)
    inside = sig[sig.index("(") + 1 : sig.rindex(")")]
    return [names[t] for t in inside.split(",") if t]


def test_shutdown_joins_a_running_answer(qtbot, bridge):
    started = threading.Event()
    bridge.worker.piece.connect(lambda *_: started.set(), Qt.ConnectionType.DirectConnection)
    bridge.answer([{"role": "user", "content": "Go"}], SamplingParams(temperature=0.0, max_tokens=5000), None)
    assert started.wait(30)
    assert bridge.shutdown(10000)
    assert not bridge.worker_thread.isRunning()


def test_emitting_many_signals_leaves_true_alone(qapp):
    """PySide6 6.12.0's emit() gives away a reference to True on every call; ``emit`` makes up for it, or
    a long answer would abort the interpreter ("bool_dealloc")."""
    import sys

    from PySide6.QtCore import QObject, Signal

    from qwen_desktop.worker import emit

    class Source(QObject):
        ping = Signal(int)

    source = Source()
    got = []
    source.ping.connect(got.append)
    before = sys.getrefcount(True)
    for i in range(5000):
        emit(source.ping, i)
    assert len(got) == 5000
    assert abs(sys.getrefcount(True) - before) < 50


def test_a_draft_read_ahead_is_reused_by_the_answer(qtbot, bridge):
    params = SamplingParams(temperature=0.0, max_tokens=10)
    draft = [{"role": "user", "content": "Tell me about the sea"}]
    with qtbot.waitSignal(bridge.read_ahead_done, timeout=30000) as read:
        request = bridge.read_ahead(draft, params.max_tokens)
    assert read.args[0] == request
    held = read.args[1]
    assert held == len(bridge.engine.plan(draft, params.max_tokens).prompt)
    sent = [{"role": "user", "content": "Tell me about the sea and the sky"}]
    with qtbot.waitSignal(bridge.finished, timeout=30000) as done:
        bridge.answer(sent, params, None)
        assert bridge.read_ahead(draft, params.max_tokens) is None, "no reading ahead while an answer waits"
    stats = done.args[0].stats
    # everything up to where the text changed was reused, and only that
    shared = common_prefix(
        bridge.engine.plan(draft, params.max_tokens).prompt,
        bridge.engine.plan(sent, params.max_tokens).prompt,
    )
    assert stats.reused_tokens == shared > stats.prompt_tokens // 2


def test_an_answer_stops_a_long_read_ahead_at_its_next_chunk(qtbot, bridge, monkeypatch):
    from qwen_desktop.engine import generate

    chunk = 64  # the tiny model's context holds 512 tokens: small chunks give a read-ahead several
    monkeypatch.setattr(generate, "PREFILL_CHUNK", chunk)
    long_draft = [{"role": "user", "content": "word " * 512}]
    chunks = []
    in_first_chunk, answer_queued = threading.Event(), threading.Event()
    original = bridge.engine.model.forward

    def pausing_forward(ids, keep=1):  # on the worker thread: hold the first chunk until Enter is pressed
        chunks.append(len(ids))
        if len(chunks) == 1:
            in_first_chunk.set()
            assert answer_queued.wait(10)
        return original(ids, keep)

    bridge.engine.model.forward = pausing_forward
    try:
        bridge.read_ahead(long_draft, 10)
        qtbot.waitUntil(in_first_chunk.is_set, timeout=10000)
        with qtbot.waitSignal(bridge.finished, timeout=30000) as done:
            bridge.answer([{"role": "user", "content": "Hi"}], SamplingParams(max_tokens=3), None)
            answer_queued.set()
    finally:
        del bridge.engine.model.forward
    assert chunks[0] == chunk
    assert chunks[1] < chunk and sum(chunks) < 2 * chunk, "the read-ahead went on after an answer was queued"
    assert done.args[0].reason == "length"
