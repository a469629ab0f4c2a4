"""The official openai client against a real uvicorn: answers, streams, stops, seeds, usage, concurrency."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

QUESTION = [{"role": "user", "content": "Tell me about the sea."}]


def greedy(client, model_id, messages=QUESTION, **extra):
    return client.chat.completions.create(
        model=model_id, messages=messages, temperature=0, seed=1, max_tokens=24, **extra
    )


def streamed_text(client, model_id, messages=QUESTION, **extra):
    chunks = list(
        client.chat.completions.create(
            model=model_id, messages=messages, temperature=0, seed=1, max_tokens=24, stream=True, **extra
        )
    )
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks


def test_models_lists_the_loaded_model(client, model_id):
    assert [m.id for m in client.models.list()] == [model_id]


def test_a_plain_answer_has_text_and_usage(client, model_id):
    reply = greedy(client, model_id)
    choice = reply.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert reply.model == model_id
    usage = reply.usage
    assert usage.prompt_tokens > 5 and 0 < usage.completion_tokens <= 24
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_a_streamed_answer_is_the_same_answer(client, model_id):
    text, chunks = streamed_text(client, model_id)
    assert len(chunks) > 3  # it really streamed, piece by piece
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert text == greedy(client, model_id).choices[0].message.content


def test_stream_usage_comes_last_when_asked(client, model_id):
    _text, chunks = streamed_text(client, model_id, stream_options={"include_usage": True})
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_a_stop_sequence_ends_the_answer_before_it(client, model_id):
    full = greedy(client, model_id).choices[0].message.content
    assert len(full) > 6
    stop = full[3:6]
    cut = full[: full.index(stop)]
    reply = greedy(client, model_id, stop=[stop, "never appears ~~~"])
    assert reply.choices[0].message.content == cut
    assert reply.choices[0].finish_reason == "stop"
    streamed, _chunks = streamed_text(client, model_id, stop=stop)
    assert streamed == cut


def test_a_fixed_seed_reproduces_a_sampled_answer(client, model_id):
    def sample(seed):
        return (
            client.chat.completions.create(
                model=model_id, messages=QUESTION, temperature=1.2, top_p=1.0, seed=seed, max_tokens=24
            )
            .choices[0]
            .message.content
        )

    first = sample(7)
    assert sample(7) == first
    assert any(sample(s) != first for s in (8, 9, 10))  # the seed is what fixes it


def test_raw_completions(client, model_id):
    reply = client.completions.create(
        model=model_id, prompt="The sea is", max_tokens=8, temperature=0, seed=1
    )
    assert reply.choices[0].text
    assert reply.usage.completion_tokens <= 8
    chunks = list(
        client.completions.create(
            model=model_id, prompt="The sea is", max_tokens=8, temperature=0, seed=1, stream=True
        )
    )
    assert "".join(c.choices[0].text for c in chunks) == reply.choices[0].text


def test_two_concurrent_clients_are_both_answered(client, model_id):
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(lambda q: greedy(client, model_id, [{"role": "user", "content": q}]), ["Hi", "Bye"])
    assert a.choices[0].message.content and b.choices[0].message.content


def test_twenty_concurrent_streams_each_get_their_own_text(client, model_id):
    questions = [f"Question {i}: what is {i} plus {i}?" for i in range(20)]
    expected = [
        greedy(client, model_id, [{"role": "user", "content": q}]).choices[0].message.content
        for q in questions
    ]
    assert len(set(expected)) > 1  # different questions, different answers: mixing would show
    start = threading.Barrier(20)

    def run(q):
        start.wait()
        return streamed_text(client, model_id, [{"role": "user", "content": q}])[0]

    with ThreadPoolExecutor(20) as pool:
        got = list(pool.map(run, questions))
    assert got == expected


def test_a_disconnect_cancels_the_generation(client, model_id, host, paced_model):
    paced_model(0.003)  # ~1.2 s for the 400 tokens: the hang-up comes mid-answer on any machine
    ends = []
    unsubscribe = host.subscribe(
        lambda job, ev: ends.append((job.client, ev)) if type(ev).__name__ in ("Finished", "Failed") else None
    )
    try:
        stream = client.chat.completions.create(
            model=model_id, messages=QUESTION, temperature=0.8, max_tokens=400, stream=True
        )
        for seen, _chunk in enumerate(stream, 1):
            if seen == 3:
                break
        stream.close()  # the client hangs up mid-answer
        # the next request is answered (the model was freed for it), and the hung-up job was cancelled
        assert greedy(client, model_id).choices[0].message.content
    finally:
        unsubscribe()
    first = ends[0][1]
    assert first.reason == "cancelled"
    assert first.stats.generated_tokens < 400


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"model": "no-such-model"}, openai.NotFoundError, "not loaded"),
        ({"temperature": 5}, openai.BadRequestError, "temperature"),
        ({"n": 2}, openai.BadRequestError, "n = 1"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, openai.BadRequestError, "role"),
        ({"messages": [{"role": "user", "content": "word " * 3000}]}, openai.BadRequestError, "context"),
    ],
)
def test_errors_are_openai_errors_with_the_right_status(client, model_id, kwargs, error, words):
    args = {"model": model_id, "messages": QUESTION, "max_tokens": 4, **kwargs}
    with pytest.raises(error) as caught:
        client.chat.completions.create(**args)
    assert words in caught.value.message
    assert "Traceback" not in caught.value.response.text


def test_a_full_queue_is_503_with_retry_after(tiny_engine, model_id):
    from qwen_desktop.engine.host import EngineHost

    from .conftest import serve

    full = EngineHost(max_queue=0, engine=tiny_engine)  # nothing may wait: every API request is refused
    server = serve(full)
    try:
        with (
            openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0) as c,
            pytest.raises(openai.APIStatusError) as caught,
        ):
            c.chat.completions.create(model=model_id, messages=QUESTION, max_tokens=4)
        assert caught.value.status_code == 503
        assert int(caught.value.response.headers["retry-after"]) > 0
    finally:
        server.stop()
        full.close()


def test_an_api_key_is_required_when_set(host, model_id):
    from .conftest import serve

    server = serve(host, api_key="s3cret")
    try:
        for key in ("", "wrong"):
            with (
                openai.OpenAI(base_url=server.url + "/v1", api_key=key or "-", max_retries=0) as c,
                pytest.raises(openai.AuthenticationError),
            ):
                c.models.list()
        with openai.OpenAI(base_url=server.url + "/v1", api_key="s3cret", max_retries=0) as good:
            assert [m.id for m in good.models.list()] == [model_id]
    finally:
        server.stop()
