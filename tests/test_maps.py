"""The probability maps (``core/online/maps.py``) against the dictionary reference of ``naive.ProbabilityMaps``,
and what they must leave alone: the mix they refine learns exactly as it does without them."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import naive
from seqd.core.online import OnlineConfig, OnlineLearner, snapshot
from seqd.core.online.sources import MATCH_LEN, MATCH_PTR
from seqd.core.online.maps import MAP_A_ROWS, MAP_POINTS, initial_maps, map_rows
from seqd.core.online.state import ACTIVE, WINDOW_POS
from seqd.core.online.steps import learn_step, predict_step

SMALL = dict(units=3, degree=2, alphabet_cap=256, window=5, context_orders=(1, 2, 3), context_bits=12,
             history_bits=12, match_bits=12, match_min=4, selected_weights=True, probability_maps=True)
WITH_FIELDS = dict(SMALL, field_column_context=True, field_selected_weights=True, field_selecting_fields=3,
                   field_selecting_positions=3, unit_selected_weights=True)


def log_lines(n: int = 160, seed: int = 5) -> np.ndarray:
    rng = random.Random(seed)
    text = "".join(f"2026-11-{1 + i // 40:02d} 10:{i % 60:02d}:{rng.randrange(60):02d} "
                   f"{rng.choice(['INFO', 'WARN'])} job {rng.randrange(30)} took {rng.randrange(999)} ms\n"
                   for i in range(n))
    return np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int64)


@pytest.mark.parametrize("settings", [SMALL, WITH_FIELDS], ids=["match", "match-and-fields"])
def test_the_refined_prediction_and_the_maps_match_the_reference(settings):
    """Symbol by symbol, the refinement of the mix's prediction, the scored bits and the tables at the end.

    The maps' contexts (the match state, the field set's row) are read off the learner: they are checked
    against the dictionary reference of the context units in ``test_context.py``.
    """
    cfg = OnlineConfig(**settings)
    learner = OnlineLearner(cfg)
    st, hyper, flags = learner.state, learner._hyper, learner._flags
    ref = naive.ProbabilityMaps()
    x = log_lines()
    scored = OnlineLearner(cfg).learn(x)  # the prequential bits of the same stream, learned in one call
    H = st.hist.shape[0]
    for t, symbol in enumerate(int(v) for v in x):
        width = predict_step(st, flags)
        mix = st.pi[int(st.counts[WINDOW_POS]), :width].tolist()
        length = int(st.ctx_int[MATCH_LEN])
        match_code = int(st.code_of[int(st.hist[int(st.ctx_int[MATCH_PTR]) % H])]) if length else -1
        field_row = int(st.fsel_row[0]) if cfg.field_selected_weights else 0
        want = ref.refine(mix, length, match_code, field_row)
        got = st.coded[:width]
        assert np.allclose(got, want, rtol=1e-9, atol=1e-300), f"position {t}"
        assert math.isclose(float(got.sum()), 1.0, rel_tol=1e-12)
        code = int(st.code_of[symbol])  # 0: a first occurrence, scored on the escape, then named among the unseen
        naming = math.log2(cfg.alphabet_cap - int(st.counts[ACTIVE])) if code == 0 else 0.0
        assert math.isclose(scored[t], -math.log2(want[code]) + naming, rel_tol=1e-9), f"position {t}: bits"
        learn_step(st, hyper, flags, symbol)
        ref.learn(code)
    for (which, row), table in ref.tables.items():
        at = row if which == "A" else MAP_A_ROWS + row
        assert np.allclose(st.maps[at], table, rtol=1e-9), (which, row)
        assert np.allclose(st.map_counts[at], ref.counts[(which, row)], rtol=1e-12)
    # every row the reference never read still holds the identity
    read = {row if which == "A" else MAP_A_ROWS + row for which, row in ref.tables}
    untouched = [r for r in range(st.maps.shape[0]) if r not in read]
    assert np.array_equal(st.maps[untouched], initial_maps(len(untouched)))
    assert st.maps.shape == (map_rows(3 * 2 * 3 * 4 if cfg.field_selected_weights else 0), MAP_POINTS)


def test_the_mix_learns_the_same_with_or_without_the_maps():
    """The network and the mixer learn from the mix's own prediction: the maps change what is scored and
    coded, never what is learned."""
    x = log_lines()
    with_maps = OnlineLearner(OnlineConfig(**WITH_FIELDS))
    without = OnlineLearner(OnlineConfig(**{**WITH_FIELDS, "probability_maps": False}))
    bits_with, bits_without = with_maps.learn(x), without.learn(x)
    for name in ("w", "tau", "ctx_w", "sel_w", "fsel_w", "V", "a", "pi"):
        assert np.array_equal(getattr(with_maps.state, name), getattr(without.state, name)), name
    assert without.state.maps.size == 0 and with_maps.state.maps.size > 0
    assert bits_with.sum() < bits_without.sum()  # on a log, the refinement pays already


def test_initial_maps_pass_the_mix_through():
    """At the knots, a new row returns the probability it was given (the identity of stretch and squash)."""
    table = initial_maps(1)[0]
    for j in range(MAP_POINTS):
        assert math.isclose(math.log(table[j] / (1.0 - table[j])), j - 8.0, abs_tol=1e-12)


@pytest.mark.parametrize("damage, value", [("maps", 1.5), ("maps", -0.1), ("map_counts", 1e9), ("map_at", 10_000),
                                           ("map_frac", 2.0), ("maps", float("nan"))])
def test_damaged_maps_in_a_snapshot_are_refused(damage, value):
    learner = OnlineLearner(OnlineConfig(**WITH_FIELDS))
    learner.learn(log_lines(20))
    getattr(learner.state, damage).reshape(-1)[-1] = value
    with pytest.raises(ValueError, match="probability maps|non-finite"):
        snapshot.from_bytes(learner.to_bytes())


def test_a_model_without_context_units_refuses_a_match_in_its_snapshot():
    """The maps read the match state (0 without a match model): a forged one must not reach them."""
    learner = OnlineLearner(OnlineConfig(units=2, degree=1, alphabet_cap=64, probability_maps=True))
    learner.learn(np.arange(40) % 7)
    for where, value in ((MATCH_LEN, -10**6), (MATCH_LEN, 3), (MATCH_PTR, 5)):
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        damaged.state.ctx_int[where] = value
        with pytest.raises(ValueError, match="without context units"):
            snapshot.from_bytes(damaged.to_bytes())


def test_a_snapshot_with_maps_continues_bit_for_bit():
    x = log_lines()
    whole = OnlineLearner(OnlineConfig(**WITH_FIELDS))
    bits = whole.learn(x)
    first = OnlineLearner(OnlineConfig(**WITH_FIELDS))
    head = first.learn(x[:1000])
    rest = OnlineLearner.from_bytes(first.to_bytes()).learn(x[1000:])
    assert np.array_equal(np.concatenate([head, rest]), bits)
