"""Unbiased pass@k as the official scorer computes, rounds and omits it (spec 2.7, H11)."""

from __future__ import annotations

from math import comb

import pytest

from lmms_tasks.utils.humaneval_v.passk import official_k, pass_at_k, pass_at_k_mean, pass_at_k_score


@pytest.mark.parametrize("c,expected", [(0, 0.0), (1, 0.5), (2, 0.8), (3, 0.95), (4, 1.0), (5, 1.0), (6, 1.0)])
def test_pass_at_3_of_6(c: int, expected: float) -> None:
    assert pass_at_k(6, c, 3) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("n,c,k", [(6, 2, 3), (10, 3, 5), (20, 7, 10), (1, 1, 1), (1, 0, 1), (5, 0, 2)])
def test_matches_combinatorial_definition(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_score_is_rounded_mean_times_100() -> None:
    # tasks with c = 1, 2, 3 of 6 -> (0.5 + 0.8 + 0.95) / 3 = 0.75 -> 75.0
    passed = {"a": [1, 0, 0, 0, 0, 0], "b": [0, 1, 0, 1, 0, 0], "c": [1, 1, 1, 0, 0, 0]}
    assert pass_at_k_score(passed, 3) == 75.0
    assert pass_at_k_score({"a": [True], "b": [False], "c": [True]}, 1) == 66.7


def test_unrounded_value_next_to_the_official_rounding() -> None:
    # the official round(100 * mean, 1) hides differences below 0.05 points; the unrounded value keeps them
    a = {"a": [True], "b": [False], "c": [True]}  # 2/3
    b = {"a": [True], "b": [False], "c": [True], **{f"x{i}": [True] for i in range(1000)}, **{f"y{i}": [False] for i in range(499)}}
    assert pass_at_k_mean(a, 1) == pytest.approx(200 / 3) and pass_at_k_mean(b, 1) == pytest.approx(100 * 1002 / 1502)
    assert pass_at_k_score(a, 1) == pass_at_k_score(b, 1) == 66.7
    assert pass_at_k_mean(a, 1) != pass_at_k_mean(b, 1)
    assert pass_at_k_score(a, 1) == round(pass_at_k_mean(a, 1), 1)


def test_each_task_uses_its_own_sample_count() -> None:
    # unequal n per task (n > 1): pass@1 = mean of c/n per task = (1/2 + 2/3 + 1/4) / 3; a shared n would differ
    passed = {"a": [1, 0], "b": [1, 1, 0], "c": [0, 0, 0, 1]}
    assert pass_at_k_mean(passed, 1) == pytest.approx(100 * (1 / 2 + 2 / 3 + 1 / 4) / 3)
    assert pass_at_k_score(passed, 1) == 47.2
    # pass@3 over 6, 4 and 3 samples: 1 - C(n-c,3)/C(n,3) per task
    passed3 = {"a": [1, 0, 0, 0, 0, 0], "b": [1, 0, 0, 0], "c": [0, 0, 0]}
    assert pass_at_k_mean(passed3, 3) == pytest.approx(100 * (0.5 + 0.75 + 0.0) / 3)
    assert pass_at_k_score(passed3, 3) == 41.7


def test_omitted_when_a_task_has_fewer_than_k_samples() -> None:
    assert pass_at_k_score({"a": [1, 1, 1, 1, 1, 1], "b": [1, 1]}, 3) is None
    assert pass_at_k_mean({"a": [1, 1, 1, 1, 1, 1], "b": [1, 1]}, 3) is None
    assert pass_at_k_score({}, 1) is None


def test_official_k() -> None:
    assert (official_k(1), official_k(6)) == (1, 3)
