"""The contract every learner keeps, checked over every registered configuration (``tests/contract.py``).

Only the public interface is used: ``learner(config)``, ``learn``,
``predict_proba_one``, ``predict_proba``, ``to_bytes``, ``from_bytes``,
``stats`` and the ``.sqd`` container's ``compress`` / ``decompress``.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import contract
from contract import REGISTRY, Entry
from seqd.core import coder
from seqd.core.container import compress, decompress, read_header, read_records
from seqd.core.bits import BitsConfig
from seqd.core.online import OnlineConfig

each = pytest.mark.parametrize("entry", REGISTRY, ids=str)


def _window(entry: Entry) -> int:
    """The GLNN's window K; a learner without windows is checked at the same positions as one of 8."""
    return getattr(entry.config(), "window", 8)


# -- determinism ----------------------------------------------------------------------------------


@each
def test_chunking_does_not_change_the_bits(entry):
    x = contract.stream(entry)
    whole, one_by_one, chunked = entry.make(), entry.make(), entry.make()
    bits = whole.learn(x)
    assert bits.shape == (len(x),) and np.all(np.isfinite(bits)) and np.all(bits >= 0.0)
    single = np.concatenate([one_by_one.learn(x[t:t + 1]) for t in range(len(x))])
    rng = np.random.default_rng(len(entry.name))
    cuts = np.unique(np.concatenate([[0, len(x)], rng.integers(1, len(x), size=25)]))
    pieces = [chunked.learn(x[i:j]) for i, j in zip(cuts[:-1], cuts[1:])]
    assert np.array_equal(single, bits), "symbol by symbol"
    assert np.array_equal(np.concatenate(pieces), bits), f"chunks cut at {cuts.tolist()}"
    final = whole.to_bytes()
    assert one_by_one.to_bytes() == final and chunked.to_bytes() == final
    # the stream is long enough to learn from
    assert bits[-300:].mean() < bits[:300].mean()
    assert whole.stats["symbols"] == len(x)


# -- snapshots --------------------------------------------------------------------------------------


@each
def test_snapshot_anywhere_continues_bit_for_bit(entry):
    """After the first symbol, inside a window, with a window due on the next symbol, and just after one."""
    K = _window(entry)
    x = contract.stream(entry)
    reference = entry.make()
    bits = reference.learn(x)
    final = reference.to_bytes()
    # the first symbol, inside a window (K > 3), with a window due on the next symbol, just after a window
    positions = [1, 2 * K + 3, 4 * K, 4 * K + 1]
    learner = entry.make()
    done, windows = 0, []
    for p in positions:
        assert np.array_equal(learner.learn(x[done:p]), bits[done:p])
        done = p
        windows.append(learner.stats.get("windows"))
        restored = entry.learner.from_bytes(learner.to_bytes())
        assert restored.config == learner.config
        assert restored.predict_proba_one() == learner.predict_proba_one(), f"snapshot at {p}"
        assert np.array_equal(restored.predict_proba(), learner.predict_proba()), f"snapshot at {p}"
        assert np.array_equal(restored.learn(x[p:]), bits[p:]), f"snapshot at {p}"
        assert restored.to_bytes() == final, f"snapshot at {p}"
    if entry.random and "windows" in learner.stats:  # the GLNN's units: a window after each K symbols, from K + 1 on
        assert windows == [(p - 1) // K for p in positions] == [0, 2, 3, 4]
    # the snapshots did not disturb the learner they were taken from
    assert np.array_equal(learner.learn(x[done:]), bits[done:])
    assert learner.to_bytes() == final


# -- coding -----------------------------------------------------------------------------------------


def _floor_bits(codes: int) -> float:
    """Most bits per interval that quantisation adds to -log2 p (``coder.quantize``'s floor of 1 per code)."""
    total = 1 << coder.PRECISION
    return -math.log2(1.0 - codes / total)


def _truncation_bits() -> float:
    """Most bits per interval that the range coder's integer division adds (``core/coder.py``)."""
    return -math.log2(1.0 - (1 << coder.PRECISION) / coder.TOP)


def _rank_bits(data: bytes, cap: int) -> np.ndarray:
    """Per symbol, the bits naming a first occurrence among the unseen symbols (0 for a known symbol)."""
    out, seen = np.zeros(len(data)), set()
    for t, symbol in enumerate(data):
        if symbol not in seen:
            out[t] = math.log2(cap - len(seen))
            seen.add(symbol)
    return out


@each
def test_encode_then_decode_is_the_identity(entry):
    """And the encoded size is the prequential code length within what the range coder adds or saves.

    (The bitwise model's files, format 4, code bits, not symbols: its payload is bounded the same way.)
    Symbol t costs the coder -log2 q_t for its quantised probability q_t, which
    is at least p_t (1 - n/2^16) and at most (p_t + 2^-16) / (1 - n/2^16)
    (``coder.quantize``): the floor of 1/2^16 makes a symbol the model all but
    excluded cheaper to code than the model says.  The range coder's division
    adds at most a truncation per interval, and a few bytes of flush.
    """
    config = entry.config()
    data = bytes(contract.stream(entry).astype(np.uint8))
    if isinstance(config, BitsConfig):  # format 4: each bit coded at its probability, a few bytes of overhead
        packed = compress(data, config)
        assert decompress(packed) == data
        reader = io.BytesIO(packed)
        header = read_header(reader)
        assert header.config == config
        block, _ = list(read_records(reader, header, header.size))
        bits = entry.make().learn(data).sum()
        assert bits / 8 - 4 <= len(block.payload) <= bits / 8 * 1.002 + 8
        return
    if not isinstance(config, OnlineConfig):  # the container codes with the byte models only
        with pytest.raises(ValueError, match="has no .sqd format"):
            compress(data, config)
        return
    if config.alphabet_cap != 256:
        with pytest.raises(ValueError, match="alphabet_cap must be 256"):
            compress(data, config)
        return
    packed = compress(data, config)
    assert decompress(packed) == data
    reader = io.BytesIO(packed)
    header = read_header(reader)
    assert header.config == config  # the file names the model it was coded with
    block, end = list(read_records(reader, header, header.size))
    assert block.length == len(data) and end.total_length == len(data)
    bits = entry.make().learn(data)
    rank = _rank_bits(data, 256)
    intervals = len(data) + np.count_nonzero(rank)  # a first occurrence codes the escape, then its rank
    floor = _floor_bits(257)
    model = bits - rank  # -log2 p_t of the symbol's code (the escape's for a first occurrence)
    fewest = np.sum(-np.log2(2.0 ** -model + 2.0 ** -coder.PRECISION) + rank) - len(data) * floor
    most = bits.sum() + intervals * (floor + _truncation_bits())
    flush = 8 * 6  # bits: the coder's leading byte and its final flush
    payload = 8 * len(block.payload)
    assert fewest - flush <= payload <= most + flush, (fewest, payload, most, bits.sum())


# -- inputs ------------------------------------------------------------------------------------------


@each
def test_learning_does_not_mutate_its_input(entry):
    x = contract.stream(entry, 400)
    expected = entry.make().learn(x.copy())
    given = x.copy()
    assert np.array_equal(entry.make().learn(given), expected)
    assert np.array_equal(given, x) and given.dtype == np.int64
    as_bytes = bytearray(x.astype(np.uint8).tobytes())
    assert np.array_equal(entry.make().learn(as_bytes), expected)
    assert as_bytes == bytearray(x.astype(np.uint8).tobytes())
    narrow = x.astype(np.uint16)  # another integer dtype, and a strided view of a larger array
    strided = np.repeat(x, 2)[::2]
    assert np.array_equal(entry.make().learn(narrow), expected) and np.array_equal(narrow, x)
    assert np.array_equal(entry.make().learn(strided), expected) and np.array_equal(strided, x)


@each
def test_the_seed_decides_the_stream(entry):
    x = contract.stream(entry, 400)
    config = entry.config()
    first = entry.make().learn(x)
    assert np.array_equal(entry.make(seed=config.seed).learn(x), first)
    other = entry.make(seed=config.seed + 1).learn(x)
    if entry.random:
        assert not np.array_equal(other, first), "another seed gave the same stream: is the model random?"
    else:
        assert np.array_equal(other, first), "the seed changed a model that is not random"


def _bad_inputs(cap: int):
    return [
        ([0, 1, cap], rf"symbol {cap} is outside the alphabet \[0, {cap}\)"),
        (np.array([1, -1, 0]), r"symbol -1 is outside the alphabet"),
        (np.array([0.0, 1.0]), r"symbols must be integers, got dtype float64"),
        (np.array([True, False]), r"symbols must be integers, got dtype bool"),
        (np.array([[0, 1], [1, 0]]), r"one-dimensional sequence, got shape \(2, 2\)"),
        ([], r"empty input"),
        (np.array([], dtype=np.int64), r"empty input"),
        (b"", r"empty input"),
    ]


@each
def test_bad_input_is_a_clear_error_and_changes_nothing(entry):
    cap = entry.config().alphabet_cap
    x = contract.stream(entry, 300)
    learner = entry.make()
    learner.learn(x[:100])
    before = learner.to_bytes()
    for symbols, message in _bad_inputs(cap):
        with pytest.raises(ValueError, match=message):
            learner.learn(symbols)
    assert learner.to_bytes() == before, "a refused input changed the state"
    fresh = entry.make()
    fresh.learn(x[:100])
    assert np.array_equal(learner.learn(x[100:]), fresh.learn(x[100:]))


@each
def test_damaged_or_truncated_snapshot_is_a_clear_error(entry):
    learner = entry.make()
    learner.learn(contract.stream(entry, 3 * _window(entry) + 2))
    data = learner.to_bytes()
    for cut in (0, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError, match="truncated|checksum"):
            entry.learner.from_bytes(data[:cut])
    for where in (len(data) // 3, len(data) - 1):
        damaged = bytearray(data)
        damaged[where] ^= 0x20
        with pytest.raises(ValueError, match="damaged"):
            entry.learner.from_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="wrong magic"):
        entry.learner.from_bytes(b"NOTSEQD!" + data[8:])


# -- prediction -----------------------------------------------------------------------------------------


@each
def test_prediction_does_not_change_the_state(entry):
    cap = entry.config().alphabet_cap
    x = contract.stream(entry, 600)
    asked, silent = entry.make(), entry.make()
    first = asked.predict_proba_one()
    if entry.closed:  # every symbol from the start, none new
        assert len(first) == cap + 1 and first[None] == 0.0 and sum(first.values()) == pytest.approx(1.0)
    else:
        assert first == {None: 1.0}
    start = 2 * _window(entry) + 3  # ask from inside a window on
    asked.learn(x[:start])
    seen = set(range(cap)) if entry.closed else set(int(s) for s in x[:start])
    for t in range(start, len(x)):
        dist = asked.predict_proba_one()
        assert asked.predict_proba_one() == dist
        proba = asked.predict_proba()
        assert np.array_equal(asked.predict_proba(), proba)
        assert proba.shape == (cap,) and sum(dist.values()) == pytest.approx(1.0, abs=1e-12)
        symbol = int(x[t])
        bits = asked.learn(x[t:t + 1])[0]
        if symbol in seen:  # the code length is the one of the distribution just predicted
            assert bits == pytest.approx(-math.log2(dist[symbol]), rel=1e-12, abs=1e-12), f"position {t}"
        else:
            assert bits == pytest.approx(-math.log2(dist[None]) + math.log2(cap - len(seen)), rel=1e-12), \
                f"position {t}"
            seen.add(symbol)
    assert np.array_equal(silent.learn(x[:start]), entry.make().learn(x[:start]))
    silent.learn(x[start:])
    assert asked.to_bytes() == silent.to_bytes()


# -- the registry itself ----------------------------------------------------------------------------


def test_every_daemon_preset_is_registered():
    """Every preset the daemon serves builds a configuration the registry holds (several names may build one:
    "bytes", "bitwise" and "bitwise-3" today), and entry ``preset-<name>`` is preset ``name`` as it builds it."""
    from seqd.daemon.models import PRESETS  # here only: the rest of the suite does not need the daemon

    registered = {e.name.removeprefix("preset-"): e for e in REGISTRY if e.name.startswith("preset-")}
    assert set(registered) <= set(PRESETS), f"registered {sorted(registered)}, the daemon has {sorted(PRESETS)}"
    held = [entry.config() for entry in REGISTRY]
    for name, (model, make) in PRESETS.items():
        assert make() in held, f"no registry entry builds the daemon's preset {name}"
        if name in registered:
            assert registered[name].config() == make(), name


@each
def test_the_declared_bytes_are_the_learners(entry):
    """What the daemon budgets and bounds a snapshot by without making a learner (``learners.state_nbytes``,
    ``first_resident_nbytes``) is what the learner holds."""
    from seqd.core.learners import first_resident_nbytes, state_nbytes

    learner = entry.make()
    assert state_nbytes(learner.config) == learner.state_bytes
    assert first_resident_nbytes(learner.config) == learner.resident_bytes
    assert len(learner.to_bytes()) <= learner.state_bytes + (1 << 20)
