"""The bitwise model (``seqd.core.bits``): its kernels against the slow references of ``naive_bits.py``, its
match and number models on streams whose next byte is known, and its settings' errors.  (The contract every
learner keeps is ``test_contract.py``'s, entries ``preset-bitwise`` and ``bitwise-small-tables``.)"""

from __future__ import annotations

import numpy as np
import pytest

import naive_bits
from contract import log_bytes
from seqd.core.bits import BitsConfig, BitsLearner
from seqd.core.bits import contexts, mixing, model, predicted
from seqd.core.bits.config import (BIAS_INPUT, FIELD_ABOVE, INTS, MATCH_BYTE, MATCH_INPUT, MIXERS, NUMBER_BUCKET,
                                   NUMBER_BYTE, NUMBER_INPUT, NUMBER_J, SOURCES, UNIT_INPUT)
from seqd.core.bits.versions import PRESETS
from seqd.core.bits.mixing import APM1_ROW, APM2_ROW, FINAL_ROW

SMALL = dict(table_bits=12, history_bits=14, match_bits=12)


def _ready(learner):
    """Locate the next byte's contexts and predictions, as ``learn_buffer`` does at a byte's start."""
    contexts.locate(learner.state)
    predicted.predict(learner.state)


REVISIONS = {1: BitsConfig.from_settings({**PRESETS["bitwise-1"], **SMALL}),
             2: BitsConfig.from_settings({**PRESETS["bitwise-2"], **SMALL}),
             3: BitsConfig(revision=3, table_growth=True, table_ways=4, table_bits=14, history_bits=14,
                           match_bits=12, number_bits=12)}


@pytest.mark.parametrize("revision, seed", [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2)])
def test_a_byte_s_bits_against_the_reference(revision, seed):
    """The 8 bits of a byte, mid-stream: each one's inputs, the mixers' logits and the 16-bit probability as the
    formulas give them (and predicting changes nothing learned), then every array ``learn_bit`` changes as the
    reference changes it; for revision 2 also the units' logit and writing step and the runs' votes and
    rates."""
    learner = BitsLearner(REVISIONS[revision])
    data = log_bytes(3000, seed)
    learner.learn(data[:2500])
    st, hyper = learner.state, learner._hyper
    model.start_byte(st, hyper)
    runs = naive_bits.runs_at_start(st)
    if revision >= 2:
        assert runs and st.runs[-1, 0] == len(runs)
    symbol, c0 = data[2500], 1
    for bit in range(7, -1, -1):
        k, nibble = 7 - bit, 0 if bit >= 4 else 1
        if bit == 3:
            mixing.find_buckets(st, hyper, c0)
        before = st.weights.copy(), st.buckets.copy()
        p16 = mixing.probability(st, hyper, c0, bit)
        assert np.array_equal(st.weights, before[0]) and np.array_equal(st.buckets, before[1])
        node = naive_bits.node_of(c0, bit)
        x = st.inputs[k].copy()
        assert np.allclose(x[:2 * SOURCES], naive_bits.source_inputs(st, nibble, node), rtol=1e-12, atol=1e-12)
        assert x[BIAS_INPUT] == 0.25 and np.isfinite(x[MATCH_INPUT:NUMBER_INPUT + 1]).all()
        if revision >= 2:
            u = naive_bits.unit_logit(st, c0)
            assert x[UNIT_INPUT] == pytest.approx(min(max(u, -8.0), 8.0), rel=1e-12, abs=1e-12)
            want_runs = naive_bits.run_inputs(runs, SOURCES, c0, bit)
            assert np.allclose(x[UNIT_INPUT + 1:UNIT_INPUT + 1 + SOURCES], want_runs, rtol=1e-12, atol=1e-12)
            assert not x[UNIT_INPUT + 1 + SOURCES:].any()  # the padding to four lanes
        rows = [int(r) for r in st.rows[k, :MIXERS]]
        apm_rows = (int(st.rows[k, APM1_ROW]), int(st.rows[k, APM2_ROW]))
        final_row = int(st.rows[k, FINAL_ROW])
        if revision == 3:
            assert (rows[3], *apm_rows) == naive_bits.rows_3(st, c0)
        d, _, pm, p16_ref, lo, frac = naive_bits.mixed(st, hyper, x, rows, final_row, apm_rows, revision)
        assert np.allclose(st.outputs[k, :MIXERS], d, rtol=1e-12, atol=1e-12)
        assert abs(p16 - p16_ref) <= 1  # seqd's own exp against math's: a last-place difference may round across
        y = (symbol >> bit) & 1
        if bit in (7, 3):
            mixing.claim(st, c0)
        want = naive_bits.learn_bit(st, hyper, y, nibble, x, rows, d, pm, final_row, node, apm_rows, lo, frac,
                                    revision)
        if revision >= 2:
            want["unit_v"], want["unit_h0"], want["unit_hd"] = (arr.copy() for arr in (st.unit_v, st.unit_h0,
                                                                                       st.unit_hd))
            v, h0, hd = naive_bits.unit_writing_step(st, hyper, c0, y, u)
            want["unit_v"][c0], want["unit_h0"][c0], want["unit_hd"][c0] = v, h0, hd
            want["run_p"], want["run_n"] = naive_bits.learn_runs(st, runs, c0, bit, y)
        mixing.learn_bit(st, hyper, bit, y)
        for name, value in want.items():  # the maps are float32: a last-place difference in their base shows
            tol = 1e-6 if value.dtype == np.float32 else 1e-9
            assert np.allclose(getattr(st, name), value, rtol=tol, atol=tol * 1e-3), (bit, name)
        c0 = 2 * c0 + y


def test_a_bit_history_counts_then_halves_the_other_count():
    """(n0, n1) after a bit: its count grows to 15 at most, the other one halves (rounding up) past 2."""
    for n0 in range(16):
        for n1 in range(16):
            for y in (0, 1):
                a, b = (n0, n1) if y == 0 else (n1, n0)  # a: the count of the bit seen, b: the other's
                a, b = min(a + 1, 15), (b + 2) // 2 if b > 2 else b
                want = (a, b) if y == 0 else (b, a)
                got = mixing._count.py_func(n0 * 16 + n1, y)
                assert (got >> 4, got & 15) == want


@pytest.mark.parametrize("table_bits", [12, 10])
def test_the_distribution_is_what_learning_scores_and_leaves_the_state(table_bits):
    """p(byte) over the 256 bytes sums to 1, and each is the product of the probabilities its bits get as they
    are learned one by one: learning byte b then costs -log2 p(b) (for the likeliest bytes and every 8th value,
    a snapshot's restore apiece); asking leaves every learned array as it was
    (with tables of 2^10 buckets, a nibble's bucket often takes over another's)."""
    learner = BitsLearner(BitsConfig(table_bits=table_bits, history_bits=14, match_bits=12))
    learner.learn(log_bytes(1500))
    before = learner.to_bytes()
    p = learner.predict_proba()
    assert p.shape == (256,) and abs(p.sum() - 1.0) < 1e-12 and (p > 0).all()
    learned = [f for f in learner.state._fields
               if f not in ("ctx", "bucket", "inputs", "outputs", "rows", "ints", "runs", "run_stretch", "fresh")]
    again = BitsLearner.from_bytes(before)
    for name in learned:
        assert np.array_equal(getattr(learner.state, name), getattr(again.state, name)), name
    scalars = np.ones(INTS, bool)
    scalars[[FIELD_ABOVE, MATCH_BYTE, NUMBER_BYTE, NUMBER_J, NUMBER_BUCKET]] = False  # each byte's start sets them
    assert np.array_equal(learner.state.ints[scalars], again.state.ints[scalars])
    likely = np.argsort(-p)[:8]  # the bytes the model expects, and every 8th value: a path through each subtree
    for b in sorted(set(range(0, 256, 8)) | set(int(v) for v in likely)):
        copy = BitsLearner.from_bytes(before)
        assert copy.learn([b])[0] == pytest.approx(-np.log2(p[b]), rel=1e-12), b


def test_the_match_model_predicts_what_followed_last_time():
    text = b"the quick brown fox jumps over the lazy dog; " * 3
    learner = BitsLearner(BitsConfig(**SMALL))
    learner.learn(text + b"the quick br")
    _ready(learner)
    assert learner.state.ints[MATCH_BYTE] == ord("o")
    assert learner.predict_one() == ord("o")


def test_the_number_model_predicts_the_next_number_of_a_counter():
    """Lines whose number steps by 7: after a few, the number model names the next one digit by digit."""
    lines = b"".join(b"task id=%d done\n" % (1000 + 7 * i) for i in range(12))
    learner = BitsLearner(BitsConfig(**SMALL))
    learner.learn(lines + b"task id=")
    want = b"%d" % (1000 + 7 * 12)
    for digit in want:
        _ready(learner)
        assert learner.state.ints[NUMBER_BYTE] == digit
        learner.learn([digit])


def test_the_history_ring_wraps():
    """A stream longer than the ring: the match model still copies from what the ring holds, and the code
    length of a repeat stays low."""
    config = BitsConfig(table_bits=10, history_bits=10, match_bits=10)
    learner = BitsLearner(config)
    block = log_bytes(700, 3)
    bits = learner.learn(block * 4)
    assert bits[-700:].mean() < bits[:700].mean() / 3


@pytest.mark.parametrize("settings, message", [
    (dict(alphabet_cap=16), "alphabet_cap must be 256"),
    (dict(table_bits=30), "table_bits must be in"),
    (dict(history_bits=5), "history_bits must be in"),
    (dict(rate=0.001, rate_floor=0.01), "the rates must satisfy"),
    (dict(slot_limit=1), "slot_limit and history_limit"),
    (dict(apm_weight=1.5), "apm_rate must be in"),
    (dict(rate="fast"), "rate must be a finite number"),
    (dict(table_bits=12.0), "table_bits must be an integer"),
])
def test_bad_settings_are_clear_errors(settings, message):
    with pytest.raises(ValueError, match=message):
        BitsConfig(**settings)


def test_a_learner_without_a_configuration_is_today_s_model():
    """BitsLearner() is BitsConfig(), the newest preset; only what is read back from an earlier seqd's
    snapshot takes the first preset's values for the settings it lacks (the test below)."""
    config = BitsLearner().config
    assert config == BitsConfig() and config.revision == 3 and config.table_growth


def test_a_snapshot_of_seqd_0_20_restores_to_its_model():
    """A version-1 snapshot (seqd 0.20's: no runs' or units' arrays, no settings for them) restores to the
    bitwise-1 model and continues bit for bit, as the learner that wrote it would; so does a stream.json's
    configuration without the new settings."""
    from collections import namedtuple
    from dataclasses import asdict, make_dataclass

    from seqd.core import arrays_snapshot
    from seqd.core.bits import snapshot
    from seqd.core.bits.versions import BITWISE_MODEL

    config = BitsConfig.from_settings({**PRESETS["bitwise-1"], **SMALL})
    learner = BitsLearner(config)
    data = log_bytes(6000, 4)
    learner.learn(data[:4000])
    arrays = {name: a for name, a in learner.state._asdict().items() if not name.startswith(("run", "unit_")) and name not in ("grown", "fresh")}
    assert not any(a.size for name, a in learner.state._asdict().items() if name not in arrays)
    settings = {k: v for k, v in asdict(config).items() if k not in BITWISE_MODEL.added}
    written = make_dataclass("Settings", list(settings))(**settings)  # seqd 0.20's settings, its arrays
    packed = arrays_snapshot.pack(snapshot.MAGIC, 1, written, namedtuple("State", list(arrays))(**arrays))
    again = BitsLearner.from_bytes(packed)
    assert again.config == config and again.config.revision == 1 and not again.config.runs
    assert np.array_equal(again.predict_proba(), learner.predict_proba())
    assert np.array_equal(again.learn(data[4000:]), learner.learn(data[4000:]))
    assert BitsConfig.from_settings(settings) == config
