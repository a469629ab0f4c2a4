"""Sampling never leaves the set its settings allow, and a seed makes it repeatable."""

from __future__ import annotations

import numpy as np
import pytest

from qwen_desktop.engine.sampler import (
    candidate_set,
    check_draft,
    greedy,
    make_repetition_penalty,
    make_sampler,
)

LOGITS = np.log(np.array([0.40, 0.25, 0.15, 0.10, 0.05, 0.03, 0.02], dtype=np.float64)).astype(np.float32)


def draws(sampler, n=3000):
    return {sampler(LOGITS) for _ in range(n)}


def test_temperature_zero_is_greedy():
    assert make_sampler(0.0) is greedy
    assert greedy(LOGITS) == 0


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_never_picks_outside_the_k_best(k):
    assert draws(make_sampler(1.0, top_k=k, seed=0)) <= set(range(k))


def test_top_p_keeps_the_smallest_set_reaching_p():
    ids, probs = candidate_set(LOGITS, 1.0, 0, 0.7, 0.0)
    assert list(ids) == [0, 1, 2]  # 0.40 + 0.25 < 0.7 <= 0.40 + 0.25 + 0.15
    assert probs.sum() == pytest.approx(1.0)
    assert draws(make_sampler(1.0, top_p=0.7, seed=1)) <= {0, 1, 2}


def test_min_p_drops_tokens_far_below_the_best():
    ids, _ = candidate_set(LOGITS, 1.0, 0, 1.0, 0.3)  # keep p >= 0.3 * 0.40 = 0.12
    assert list(ids) == [0, 1, 2]


def _exact_candidates(logits, temperature, top_k, top_p, min_p):
    """top-k, min-p and top-p by the book: a full sort of the whole vocabulary in float64."""
    scaled = logits.astype(np.float64) / temperature
    order = np.argsort(-scaled, kind="stable")
    if top_k:
        order = order[:top_k]
    probs = np.exp(scaled[order] - scaled[order[0]])
    probs /= probs.sum()
    if min_p:
        order, probs = order[probs >= min_p * probs[0]], probs[probs >= min_p * probs[0]]
    if top_p < 1.0:
        n = int(np.searchsorted(np.cumsum(probs), top_p * probs.sum() - 1e-12) + 1)
        order, probs = order[:n], probs[:n]
    return order, probs / probs.sum()


@pytest.mark.parametrize("seed", range(6))
def test_candidates_over_a_whole_vocabulary_are_the_exact_ones_but_for_negligible_tokens(seed):
    """The candidate set looks only at tokens within NEGLIGIBLE (1e-7) of the best, which keeps it fast on
    a 152k vocabulary; against a full sort it may only lack tokens that improbable."""
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(151936) * rng.uniform(1, 4)).astype(np.float32)
    logits[rng.integers(0, 151936, 30)] += rng.uniform(5, 25)  # a few likely tokens, as real logits have
    for temperature, top_k, top_p, min_p in [(0.7, 20, 0.8, 0.0), (1.0, 40, 0.95, 0.05), (1.5, 0, 1.0, 0.0)]:
        ids, probs = candidate_set(logits, temperature, top_k, top_p, min_p)
        want_ids, want_probs = _exact_candidates(logits, temperature, top_k, top_p, min_p)
        n = len(ids)
        assert list(ids) == list(want_ids[:n])
        assert probs == pytest.approx(want_probs[:n] / want_probs[:n].sum(), rel=1e-9)
        rest = want_probs[n:]  # what was left out is negligible next to the best token
        assert rest.size == 0 or rest.max() < 1e-7 * want_probs[0] * 1.0001
        if top_k:  # (with top_k 0 the same floor has always bounded the candidates)
            assert rest.sum() < top_k * 1e-7


def test_full_distribution_is_sampled_in_proportion():
    s = make_sampler(1.0, seed=3)
    counts = np.bincount([s(LOGITS) for _ in range(20000)], minlength=7) / 20000
    assert counts[0] == pytest.approx(0.40, abs=0.02)
    assert counts[4] == pytest.approx(0.05, abs=0.01)


@pytest.mark.parametrize("draft", [0, 1, 4])
def test_checking_a_draft_keeps_the_sampled_distribution(draft):
    """Prompt lookup while sampling: keeping a proposed token with its own probability, and otherwise
    sampling among the rest, must give every token exactly its plain sampling probability."""
    s = make_sampler(1.0, seed=11)
    counts = np.bincount([check_draft(s, LOGITS, draft) for _ in range(20000)], minlength=7) / 20000
    want = np.exp(LOGITS.astype(np.float64)) / np.exp(LOGITS.astype(np.float64)).sum()
    assert counts == pytest.approx(want, abs=0.012)


def test_a_draft_outside_top_k_is_never_kept():
    s = make_sampler(1.0, top_k=2, seed=5)
    assert {check_draft(s, LOGITS, 3) for _ in range(3000)} == {0, 1}


def test_greedy_keeps_a_draft_only_when_it_is_the_best():
    assert check_draft(greedy, LOGITS, 0) == 0
    assert check_draft(greedy, LOGITS, 2) == 0


def test_same_seed_same_choices():
    a, b = make_sampler(0.8, top_p=0.9, seed=7), make_sampler(0.8, top_p=0.9, seed=7)
    assert [a(LOGITS) for _ in range(50)] == [b(LOGITS) for _ in range(50)]


def test_repetition_penalty_lowers_seen_tokens():
    process = make_repetition_penalty(2.0)
    logits = np.array([2.0, -1.0, 1.0], np.float32)
    out = process(logits, [0, 1])
    assert out.tolist() == [1.0, -2.0, 1.0]
    assert make_repetition_penalty(1.0) is None
