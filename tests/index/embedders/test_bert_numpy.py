"""The numpy building blocks of the encoder, against straightforward reference formulas."""

from __future__ import annotations

import math

import numpy as np

from dory.index.embedders.base import l2_normalize_rows
from dory.index.embedders.bert_numpy import erf, gelu_, layer_norm_, mean_pool, softmax_

GRID = np.linspace(-7.0, 7.0, 100_001)
REFERENCE_ERF = np.array([math.erf(x) for x in GRID])


def test_erf_accuracy() -> None:
    assert np.abs(erf(GRID) - REFERENCE_ERF).max() < 3e-8  # the approximation itself (float64)
    as_float32 = erf(GRID.astype(np.float32))
    assert as_float32.dtype == np.float32
    assert np.abs(as_float32 - REFERENCE_ERF).max() < 5e-7  # plus float32 rounding
    assert erf(np.array([0.0]))[0] == 0.0


def test_gelu_is_exact_form_and_in_place() -> None:
    x = np.linspace(-6, 6, 3 * 100, dtype=np.float32).reshape(100, 3)  # more rows than one block
    expected = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel().tolist()])
    gelu_(x)
    np.testing.assert_allclose(x.ravel(), expected, atol=2e-6)


def test_layer_norm_matches_the_formula() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(300, 16)).astype(np.float32)
    gamma = rng.normal(size=16).astype(np.float32)
    beta = rng.normal(size=16).astype(np.float32)
    expected = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-12) * gamma + beta
    layer_norm_(x, gamma, beta, 1e-12)
    np.testing.assert_allclose(x, expected, atol=1e-5)


def test_softmax_rows_sum_to_one_and_ignore_masked() -> None:
    scores = np.array([[[[1.0, 2.0, -1e9], [0.0, 0.0, -1e9]]]], dtype=np.float32)
    softmax_(scores)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-6)
    assert scores[0, 0, 0, 2] == 0.0
    np.testing.assert_allclose(scores[0, 0, 1, :2], [0.5, 0.5])


def test_mean_pool_uses_only_real_tokens() -> None:
    hidden = np.array([[[1.0, 1.0], [3.0, 5.0], [100.0, 100.0]]], dtype=np.float32)
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(mean_pool(hidden, mask), [[2.0, 3.0]])


def test_l2_normalize_rows_leaves_zero_rows_zero() -> None:
    rows = l2_normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]])
