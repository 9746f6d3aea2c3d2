"""Tests of the synthetic tasks of seed 000, Section 4 (seqd.core.tasks)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqd.core import tasks
from seqd.core.tasks import TASKS, TaskSequence, encode, generate, xor_error_rate

SMALL_SIZES = {"alphabet": 40, "music": 60, "xor": 30, "anbn": 3, "copying": 20, "adding": 30}
SMALL_OPTIONS = {"alphabet": {}, "music": {}, "xor": {"length": 20}, "anbn": {"n_min": 5, "n_max": 12},
                 "copying": {"length": 15}, "adding": {"length": 12}}
REL = 1e-9


def small(task: str, seed: int, **overrides) -> TaskSequence:
    options = {**SMALL_OPTIONS[task], **overrides}
    return generate(task, np.random.default_rng(seed), SMALL_SIZES[task], **options)


def lines_of(seq: TaskSequence) -> list[str]:
    text = seq.text
    assert text.endswith("\n")
    return text[:-1].split("\n")


# --- generic properties -------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_deterministic_for_fixed_seed(task):
    first, second = small(task, 7), small(task, 7)
    assert first == second
    assert first.text == second.text
    np.testing.assert_array_equal(first.true_log2_prob, second.true_log2_prob)
    assert small(task, 8).text != first.text


@pytest.mark.parametrize("task", TASKS)
def test_shapes_dtypes_and_alphabet(task):
    seq = small(task, 3)
    assert seq.task == task
    assert len(seq) == seq.symbols.shape[0] == seq.predict_mask.shape[0] == seq.true_log2_prob.shape[0]
    assert seq.symbols.dtype == np.int64 and seq.predict_mask.dtype == np.float64
    assert set(np.unique(seq.predict_mask)) <= {0.0, 1.0}
    assert np.all(seq.true_log2_prob <= 0.0)
    assert np.all(seq.true_log2_prob[seq.predict_mask == 0.0] == 0.0)
    assert seq.true_log2_likelihood <= 0.0
    assert set(seq.text) <= set(seq.alphabet)
    np.testing.assert_array_equal(encode(seq.text, seq.alphabet), seq.symbols)
    assert small(task, 4).alphabet == seq.alphabet  # fixed per task, not per sample
    assert not seq.symbols.flags.writeable


@pytest.mark.parametrize("task", ["alphabet", "music", "anbn"])
def test_predict_mask_all_ones(task):
    assert np.all(small(task, 5).predict_mask == 1.0)


def test_paper_sizes():
    rng = np.random.default_rng(0)
    assert len(lines_of(generate("alphabet", rng))) == 1000
    assert len(lines_of(generate("music", rng))) == 2700
    assert len(lines_of(generate("anbn", rng))) == 2 * 10
    assert generate("xor", rng, length=3).text.count("\n") == 10000


# --- alphabet with insertions ----------------------------------------------------------------

ALPHABET_LINE = re.compile(r"^(?:[a-z](?:\((?:\d(?:\[[A-Z]{9}\])?){10}\))?)+$")


@settings(max_examples=15, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 30))
def test_alphabet_parses_and_count_formula(seed, size):
    seq = generate("alphabet", np.random.default_rng(seed), size)
    lines = lines_of(seq)
    assert len(lines) == size
    for line in lines:
        assert ALPHABET_LINE.match(line)
        assert re.sub(r"\([^)]*\)", "", line) == "abcdefghijklmnopqrstuvwxyz"
        for block in re.findall(r"\(([^)]*)\)", line):
            assert re.sub(r"\[[A-Z]*\]", "", block) == "0123456789"
    text = seq.text
    n_sub, n_subsub = text.count("("), text.count("[")
    n_upper = sum(c.isupper() for c in text)
    expected = (
        (26 * size - n_sub) * math.log2(25 / 26) + n_sub * math.log2(1 / 26)
        + (10 * n_sub - n_subsub) * math.log2(4 / 5) + n_subsub * math.log2(1 / 5)
        + n_upper * math.log2(1 / 26)
    )
    assert seq.true_log2_likelihood == pytest.approx(expected, rel=REL)


def test_alphabet_per_symbol_probabilities():
    seq = small("alphabet", 11)
    text = seq.text
    for t, char in enumerate(text):
        previous = text[t - 1] if t else "\n"
        if previous.islower():
            expected = 1 / 26 if char == "(" else 25 / 26
        elif previous.isdigit():
            expected = 1 / 5 if char == "[" else 4 / 5
        elif char.isupper():
            expected = 1 / 26
        else:
            expected = 1.0
        assert seq.true_log2_prob[t] == pytest.approx(math.log2(expected), abs=1e-12), (t, char)


def test_alphabet_mean_matches_law_expectation():
    seq = generate("alphabet", np.random.default_rng(2024))
    def entropy(p: float) -> float:
        return -p * math.log2(p) - (1 - p) * math.log2(1 - p)

    per_line = 26 * entropy(1 / 26) + 10 * entropy(1 / 5) + 10 * (1 / 5) * 9 * math.log2(26)
    standard_deviation = 100.0 * math.sqrt(1000)  # about 99 bits per line
    assert abs(-seq.true_log2_likelihood - 1000 * per_line) < 4 * standard_deviation


# --- synthetic music -------------------------------------------------------------------------

CYCLE = ["ceg", "cfa", "ceg", "gbd", "ceg", "cfa", "gbd", "ceg"]
RHYTHMS = [["4", "4", "4"], ["2", "4"], ["4.", "8", "4"], ["2."], ["4", "4", "8", "8"]]


def all_bars(chord: str) -> dict[str, float]:
    """Every bar the law can emit under ``chord`` with its probability."""
    bars = {}
    for rhythm in RHYTHMS:
        for pitches in itertools.product(chord, repeat=len(rhythm)):
            bar = " ".join(p + d for p, d in zip(pitches, rhythm)) + " |\n"
            bars[bar] = (1 / 5) * (1 / 3) ** len(rhythm)
    return bars


def test_music_parses_and_count_formula():
    seq = small("music", 13)
    bars = lines_of(seq)
    assert len(bars) == SMALL_SIZES["music"]
    expected = 0.0
    for index, bar in enumerate(bars):
        match = re.fullmatch(r"((?:[a-g][248]\.? )+)\|", bar)
        assert match, bar
        notes = match.group(1).split()
        assert all(note[0] in CYCLE[index % 8] for note in notes)
        assert [note[1:] for note in notes] in RHYTHMS
        expected += math.log2(1 / 5) + len(notes) * math.log2(1 / 3)
    assert seq.true_log2_likelihood == pytest.approx(expected, rel=REL)


def test_music_conditionals_match_brute_force():
    seq = small("music", 17)
    text, logp = seq.text, seq.true_log2_prob
    prefix_weight = {chord: defaultdict(float) for chord in set(CYCLE)}
    for chord, weights in prefix_weight.items():
        for bar, probability in all_bars(chord).items():
            for k in range(len(bar) + 1):
                weights[bar[:k]] += probability
    start = 0
    for index in range(16):
        end = text.index("\n", start) + 1
        bar, weights = text[start:end], prefix_weight[CYCLE[index % 8]]
        assert sum(logp[start:end]) == pytest.approx(math.log2(weights[bar]), abs=1e-12)
        for k in range(len(bar)):
            conditional = weights[bar[: k + 1]] / weights[bar[:k]]
            assert logp[start + k] == pytest.approx(math.log2(conditional), abs=1e-12), (bar, k)
        start = end


# --- distant XOR ---------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(3, 60))
def test_xor_lines_and_predict_mask(seed, length):
    seq = generate("xor", np.random.default_rng(seed), 8, length=length)
    lines = lines_of(seq)
    assert len(lines) == 8
    for line in lines:
        match = re.fullmatch(r"((?:[ X][01])+)=([01])", line)
        assert match, line
        body = match.group(1)
        markers, bits = body[0::2], body[1::2]
        n_bits = len(bits)
        assert length <= n_bits <= math.floor(1.1 * length + 1e-9)
        p1, p2 = [i for i, marker in enumerate(markers) if marker == "X"]
        assert 0 <= p1 < math.ceil(n_bits / 10) <= p2 < math.ceil(n_bits / 2)
        assert int(match.group(2)) == int(bits[p1]) ^ int(bits[p2])
    text = seq.text
    after_equals = np.array([t > 0 and text[t - 1] == "=" for t in range(len(text))], dtype=float)
    np.testing.assert_array_equal(seq.predict_mask, after_equals)
    assert seq.predict_mask.sum() == 8
    assert seq.true_log2_likelihood == 0.0
    assert np.all(seq.true_log2_prob == 0.0)


def test_xor_default_length_range():
    lengths = {len(line.split("=")[0]) // 2 for line in lines_of(generate("xor", np.random.default_rng(1), 300))}
    assert min(lengths) >= 100 and max(lengths) <= 110 and len(lengths) > 5


def test_xor_error_rate():
    assert xor_error_rate(np.array([0.9, 0.5, 0.2, 1.0])) == 0.5
    assert xor_error_rate([0.51]) == 0.0
    with pytest.raises(ValueError):
        xor_error_rate(np.array([]))
    with pytest.raises(ValueError):
        xor_error_rate(np.array([1.5]))


# --- a^n b^n ------------------------------------------------------------------------------------------


def test_anbn_blocks_and_likelihood():
    seq = generate("anbn", np.random.default_rng(5), 4)
    lines = lines_of(seq)
    assert len(lines) == 8
    for a_line, b_line in zip(lines[0::2], lines[1::2]):
        assert re.fullmatch(r"a+", a_line) and b_line == "b" * len(a_line)
        assert 1024 <= len(a_line) <= 2048
    assert seq.true_log2_likelihood == pytest.approx(4 * -math.log2(1025), rel=REL)


def test_anbn_conditionals_are_proper():
    n_min, n_max = 5, 12
    seq = small("anbn", 9)
    text, logp = seq.text, seq.true_log2_prob
    t = 0
    for line in lines_of(seq)[0::2]:
        n = len(line)
        for k in range(n + 1):  # k "a" already seen; P(n = k | n >= k) under the uniform law
            end_prob = (1 / (n_max - k + 1)) if k >= n_min else 0.0
            realized = end_prob if k == n else 1 - end_prob
            assert text[t] == ("\n" if k == n else "a")
            assert logp[t] == pytest.approx(math.log2(realized), abs=1e-12)
            t += 1
        assert np.all(logp[t : t + n + 1] == 0.0)
        t += n + 1
    assert seq.true_log2_likelihood == pytest.approx(SMALL_SIZES["anbn"] * -math.log2(n_max - n_min + 1), rel=REL)


# --- errors ---------------------------------------------------------------------------------------------


def test_encode_roundtrip_and_errors():
    np.testing.assert_array_equal(encode("ba\nb", "ab\n"), [1, 0, 2, 1])
    assert encode("", "ab").shape == (0,)
    with pytest.raises(ValueError, match=r"'z' at position 2"):
        encode("abz", "ab")
    with pytest.raises(ValueError, match=r"'é' at position 1"):
        encode("aéb", "ab")
    with pytest.raises(ValueError, match="repeats"):
        encode("a", "aba")


@pytest.mark.parametrize(
    "task, size, options, message",
    [
        ("poetry", 1, {}, "valid tasks: alphabet, music, xor, anbn"),
        ("alphabet", 0, {}, "positive"),
        ("music", -3, {}, "positive"),
        ("alphabet", 1, {"length": 5}, "valid options: none"),
        ("xor", 1, {"n_min": 5}, "valid options: length"),
        ("anbn", 1, {"lenght": 5}, "valid options: n_min, n_max"),
        ("xor", 1, {"length": 2}, ">= 3"),
        ("anbn", 1, {"n_min": 9, "n_max": 4}, "n_min <= n_max"),
        ("anbn", 1, {"n_min": 0}, "1 <= n_min"),
    ],
)
def test_generate_errors(task, size, options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        generate(task, np.random.default_rng(0), size, **options)


def test_generate_type_errors():
    with pytest.raises(TypeError):
        generate("music", np.random.default_rng(0), 2.5)
    with pytest.raises(TypeError):
        generate("music", 0, 2)


def test_module_constants_consistent():
    assert set(tasks.PAPER_SIZES) == set(TASKS) == set(tasks.TASK_OPTIONS)
    for alphabet in (tasks.ALPHABET_ALPHABET, tasks.MUSIC_ALPHABET, tasks.XOR_ALPHABET, tasks.ANBN_ALPHABET,
                     tasks.COPY_ALPHABET, tasks.ADD_ALPHABET):
        assert len(set(alphabet)) == len(alphabet)


# --- seed 002's copying and adding problems ------------------------------------------------------


def test_copying_recalls_its_digits_after_the_second_marker_and_scores_only_the_recall():
    T = 15
    seq = small("copying", 1)
    text = seq.text
    per = T + 22
    assert len(text) == SMALL_SIZES["copying"] * per
    digits_seen = set()
    for k in range(SMALL_SIZES["copying"]):
        part, mask = text[k * per:(k + 1) * per], seq.predict_mask[k * per:(k + 1) * per]
        data = part[:10]
        assert set(data) <= set("12345678") and part[10:12 + T] == "9" + "0" * T + "9" and part[-10:] == data
        assert list(mask) == [0.0] * (T + 12) + [1.0] * 10
        digits_seen |= set(data)
    assert digits_seen == set("12345678")
    assert np.all(seq.true_log2_prob == 0.0)  # the recall is certain under the true law


def test_adding_scores_the_sum_of_the_two_marked_digits_marked_once_in_each_half():
    T = 12
    seq = small("adding", 2)
    lines = lines_of(seq)
    assert len(lines) == SMALL_SIZES["adding"]
    firsts, seconds = set(), set()
    for line in lines:
        steps, answer = line[:T], line[T + 1]
        assert len(line) == T + 2 and line[T] == "="
        marked = [i for i, c in enumerate(steps) if c in tasks.ADD_MARKED]
        assert len(marked) == 2 and marked[0] < T // 2 <= marked[1]
        firsts.add(marked[0])
        seconds.add(marked[1])
        total = sum(tasks.ADD_MARKED.index(steps[i]) for i in marked)
        assert answer == tasks.ADD_SUMS[total]
    assert firsts == set(range(T // 2)) and seconds == set(range(T // 2, T))  # each position is drawn
    scored = np.flatnonzero(seq.predict_mask)
    assert np.array_equal(seq.symbols[scored], [tasks.ADD_ALPHABET.index(line[T + 1]) for line in lines])


def test_adding_baseline_is_the_entropy_of_the_sum_of_two_digits():
    counts = Counter(a + b for a in range(10) for b in range(10))
    expected = -sum(c / 100 * math.log2(c / 100) for c in counts.values())
    assert tasks.adding_baseline_bits() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("task, length", [("copying", 0), ("adding", 1)])
def test_copying_and_adding_refuse_a_length_too_short(task, length):
    with pytest.raises(ValueError, match=f"{task} length must be"):
        generate(task, np.random.default_rng(0), 3, length=length)


# --- places: where a model needs memory ------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_places_are_disjoint_and_cover_the_sequence(task):
    seq = small(task, 3)
    where = tasks.places(seq)
    if task in ("xor", "copying", "adding"):
        assert where == {}
        return
    assert "the rest" in where and len(where) >= 2
    stacked = np.stack(list(where.values()))
    assert stacked.shape == (len(where), len(seq)) and stacked.dtype == bool
    assert np.all(stacked.sum(axis=0) == 1)  # each position in exactly one place


def test_alphabet_places_are_the_symbols_after_each_block():
    seq = small("alphabet", 5)
    text, where = seq.text, tasks.places(seq)
    after_sub = [m.end() for m in re.finditer(r"\)", text)]
    after_subsub = [m.end() for m in re.finditer(r"\]", text)]
    assert after_sub and after_subsub  # the draw has both kinds of block
    assert list(np.flatnonzero(where["resuming after a sub-block"])) == after_sub
    assert list(np.flatnonzero(where["resuming after a sub-sub-block"])) == after_subsub
    assert all(text[i] in tasks.LETTERS + "\n" for i in after_sub)
    assert all(text[i] in tasks.DIGITS + ")" for i in after_subsub)


def test_music_places_are_the_pitches():
    seq = small("music", 2)
    text, pitches = seq.text, tasks.places(seq)["pitches"]
    bars = text.split("\n")[:-1]
    notes = sum(len(bar.split(" ")) - 1 for bar in bars)  # a bar is its notes, then "|"
    assert int(pitches.sum()) == notes
    assert {text[i] for i in np.flatnonzero(pitches)} <= set("abcdefg")


def test_anbn_b_lines_cost_nothing_under_the_true_law():
    seq = small("anbn", 4)
    text, b_lines = seq.text, tasks.places(seq)["b-lines"]
    blocks = SMALL_SIZES["anbn"]
    assert int(b_lines.sum()) == text.count("b") + blocks  # the b's and one end per block
    assert np.all(seq.true_log2_prob[b_lines] == 0.0)  # determined by the a-line
    assert seq.true_log2_prob[~b_lines].sum() == pytest.approx(seq.true_log2_likelihood)
