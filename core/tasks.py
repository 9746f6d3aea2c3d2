"""The four synthetic tasks of seed 000, Section 4, with exact true probabilities.

Every generated :class:`TaskSequence` carries, for each symbol, the log2 of its
conditional probability given the past under the true generating law, so the
regret of a model (true log-likelihood minus model log-likelihood) is exact.

Laws (seed 000, Section 4 and Examples 1-4; decisions where the text is silent
are marked *decision*):

* ``alphabet`` -- lines of the 26 lowercase letters in order, ended by ``"\\n"``.
  After each letter (z included, *decision*) a sub-block is inserted with
  probability 1/26: ``"("``, the digits 0..9, ``")"``; after each digit (9
  included, *decision*) a sub-sub-block ``"["`` + 9 uniform uppercase letters +
  ``"]"`` is inserted with probability 1/5.  An insert-or-not decision is charged
  on the symbol that reveals it (the one right after the letter or digit).
  Note: the paper reports a true log-likelihood of -88,482 bits for its 1000
  validation lines, about 3 standard deviations away from this law's
  expectation (about -97,940 bits); it would match sub-sub-blocks allowed after
  only 9 of the 10 digits.  We follow the text; regret hardly depends on it.
* ``music`` -- bars ``"<note> <note> ... |\\n"``, a note being a pitch letter and a
  duration.  Harmony follows the cycle I-IV-I-V-I-IV-V-I from the first bar
  (deterministic); pitches are uniform in the chord; the rhythm is uniform among
  five waltz rhythms, independent of pitch.  Each character is charged its exact
  conditional probability given the rhythms still consistent with the bar so
  far, so a bar costs exactly log2(1/5) + n_notes * log2(1/3).
* ``xor`` -- distant XOR: a line holds T' uniform in [T, floor(1.1 T)] random bits,
  each preceded by ``" "`` or ``"X"``; the two ``"X"`` sit at bit positions p1
  uniform in [0, ceil(T'/10)) and p2 uniform in [ceil(T'/10), ceil(T'/2)); then
  ``"="``, the XOR of the two marked bits, ``"\\n"``.  Only the bit after ``"="``
  is predicted (chi_t = 1 iff x_{t-1} is "=", eq. 5), with probability 1.
  *Decision*: T >= 3, the smallest T for which the second interval is non-empty.
* ``anbn`` -- blocks of n ``"a"``, ``"\\n"``, n ``"b"``, ``"\\n"`` with n uniform in
  [n_min, n_max] (*decision*: 1 <= n_min <= n_max).  After k "a" (n_min <= k <=
  n_max) the line ends with probability 1/(n_max - k + 1); the b-line is
  determined; a block costs exactly log2(n_max - n_min + 1) bits.

Seed 002's synthetic tasks (K. Helfrich, Section 2.5), as symbol streams:

* ``copying`` -- instances of ten digits uniform in 1..8, the marker ``"9"``, T
  blanks ``"0"``, the marker again, then the ten digits repeated: the recall is
  the only scored part, and the true law knows it with probability 1.  The seed
  says these symbols and also "total length T + 20"; *decision*: we follow the
  symbols (T + 22 per instance).  Memoryless baseline: 10 log2(8) = 30 bits
  per instance (the seed's 10 log 8 / (T + 20) per step, in nats).
* ``adding`` -- instances of T steps, each a digit 0-9 (the seed's uniform value
  in [0, 1), *decision*: quantised to its first decimal), written ``"0"``-``"9"``,
  or ``"A"``-``"J"`` on the two marked steps, at positions uniform in
  [0, floor(T/2)) and [floor(T/2), T) (*decision*: 0-based, the seed's
  intervals [1, T/2) and [T/2, T) read as half-open); then ``"="``, the sum of the
  two marked digits as one symbol ``"a"`` (0) to ``"s"`` (18), and ``"\\n"``.  Only
  the sum is scored, with probability 1 under the true law; the memoryless
  baseline is the entropy of the sum of two uniform digits, 4.03 bits.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, fields

import numpy as np

TASKS: tuple[str, ...] = ("alphabet", "music", "xor", "anbn", "copying", "adding")

#: Number of lines / bars / lines / blocks of the paper's sequences.
PAPER_SIZES: dict[str, int] = {"alphabet": 1000, "music": 2700, "xor": 10000, "anbn": 10, "copying": 1000,
                                "adding": 1000}  # copying, adding: seed 002's test sets (1,000 sequences)

#: Options each task accepts, with their defaults (the paper's values).
TASK_OPTIONS: dict[str, dict[str, int]] = {
    "alphabet": {},
    "music": {},
    "xor": {"length": 100},
    "anbn": {"n_min": 1024, "n_max": 2048},
    "copying": {"length": 2000},  # seed 002, Figure 2.13
    "adding": {"length": 750},  # seed 002, Figure 2.12
}

# --- alphabet with insertions -------------------------------------------------
LETTERS = string.ascii_lowercase
DIGITS = string.digits
UPPERCASE = string.ascii_uppercase
SUB_BLOCK_PROB = 1.0 / 26.0
SUB_SUB_BLOCK_PROB = 1.0 / 5.0
SUB_SUB_BLOCK_LENGTH = 9
ALPHABET_ALPHABET = "\n" + LETTERS + DIGITS + "()[]" + UPPERCASE

# --- synthetic music ------------------------------------------------------------
CHORDS: dict[str, str] = {"I": "ceg", "IV": "cfa", "V": "gbd"}
HARMONY_CYCLE: tuple[str, ...] = ("I", "IV", "I", "V", "I", "IV", "V", "I")
RHYTHMS: tuple[tuple[str, ...], ...] = (
    ("4", "4", "4"), ("2", "4"), ("4.", "8", "4"), ("2.",), ("4", "4", "8", "8"),
)
NOTE_SEPARATOR = " "
BAR_END = " |\n"
MUSIC_ALPHABET = "".join(sorted(
    set("".join(CHORDS.values())) | set("".join("".join(r) for r in RHYTHMS)) | set(NOTE_SEPARATOR + BAR_END)
))

# --- distant XOR and a^n b^n ---------------------------------------------------------
XOR_ALPHABET = " X01=\n"
XOR_MIN_LENGTH = 3
ANBN_ALPHABET = "ab\n"

# --- seed 002's copying and adding problems -----------------------------------------------
COPY_ALPHABET = "0123456789"  # "0" blank, "1"-"8" the digits to copy, "9" the marker
COPY_DIGITS = 10
ADD_DIGITS = "0123456789"
ADD_MARKED = "ABCDEFGHIJ"  # a marked step's digit
ADD_SUMS = "abcdefghijklmnopqrs"  # the sum of the two marked digits, 0..18
ADD_ALPHABET = ADD_DIGITS + ADD_MARKED + "=" + ADD_SUMS + "\n"


@dataclass(frozen=True)
class TaskSequence:
    """One generated sequence with its exact per-symbol true log2-probabilities.

    Arrays are stored read-only.  Equality compares every field by value.
    """

    task: str
    alphabet: str
    symbols: np.ndarray
    predict_mask: np.ndarray
    true_log2_prob: np.ndarray

    def __post_init__(self) -> None:
        for name, dtype in (("symbols", np.int64), ("predict_mask", np.float64), ("true_log2_prob", np.float64)):
            array = np.array(getattr(self, name), dtype=dtype)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if not (self.symbols.ndim == 1 and self.symbols.shape == self.predict_mask.shape == self.true_log2_prob.shape):
            raise ValueError("symbols, predict_mask and true_log2_prob must be 1-D arrays of the same length")
        if self.symbols.size and (self.symbols.min() < 0 or self.symbols.max() >= len(self.alphabet)):
            raise ValueError(f"symbol codes must lie in [0, {len(self.alphabet)})")

    @property
    def text(self) -> str:
        """The sequence as characters of :attr:`alphabet`."""
        code_points = np.array([ord(c) for c in self.alphabet], dtype="<u4")
        return code_points[self.symbols].tobytes().decode("utf-32-le")

    @property
    def true_log2_likelihood(self) -> float:
        """log2-probability of the whole sequence under the true law (<= 0)."""
        return float(self.true_log2_prob.sum())

    def __len__(self) -> int:
        return int(self.symbols.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskSequence):
            return NotImplemented
        return all(np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    def __hash__(self) -> int:
        return hash((self.task, self.alphabet, self.symbols.tobytes(), self.predict_mask.tobytes()))


def encode(text: str, alphabet: str) -> np.ndarray:
    """Map characters to int64 codes (code c is ``alphabet[c]``).

    Raises ValueError naming the first character of ``text`` not in ``alphabet``
    and its position, or if ``alphabet`` repeats a character.
    """
    if len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet {alphabet!r} repeats a character")
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.int64)
    alphabet_points = np.array([ord(c) for c in alphabet], dtype=np.int64)
    table = np.full(int(alphabet_points.max(initial=-1)) + 2, -1, dtype=np.int64)
    table[alphabet_points] = np.arange(len(alphabet))
    codes = table[np.minimum(points, table.size - 1)]
    unknown = np.flatnonzero(codes < 0)
    if unknown.size:
        position = int(unknown[0])
        raise ValueError(f"character {text[position]!r} at position {position} is not in the alphabet {alphabet!r}")
    return codes


def xor_error_rate(correct_prob: np.ndarray) -> float:
    """Classification error on the distant XOR task (seed 000, Section 4).

    ``correct_prob`` holds, for each predicted position, the probability the model
    gave to the correct bit; a position counts as an error when it is <= 1/2.
    """
    probs = np.asarray(correct_prob, dtype=np.float64).ravel()
    if probs.size == 0:
        raise ValueError("xor_error_rate needs at least one predicted position")
    if not np.all((probs >= 0.0) & (probs <= 1.0)):
        raise ValueError("probabilities must lie in [0, 1]")
    return float(np.mean(probs <= 0.5))


def places(seq: TaskSequence) -> dict[str, np.ndarray]:
    """Where in ``seq`` a model needs memory beyond the last few symbols: named boolean masks over its
    positions, disjoint, with ``"the rest"`` covering what they leave; empty for a task without them.

    * alphabet: the letter after a sub-block (``")"``), which only a model that kept its place in the
      alphabet across the block predicts, and the symbol after a sub-sub-block (``"]"``), its place among the
      digits.  A model that resumes at a random letter pays about log2(26) = 4.7 bits at each of the first
      (seed 000, Section 4).
    * music: the pitches, which follow the harmony of the bar, fixed by the bar's place in the 8-bar cycle.
    * anbn: the b-lines (their b's and their end), determined by the a-line's length.

    Seed 000's Table 1 gives one number per task; these split a model's regret by where it is paid
    (``training.experiment`` reports the split at every checkpoint).
    """
    text = np.array(list(seq.text))
    if seq.task == "alphabet":
        after = np.concatenate(([""], text[:-1]))
        named = {"resuming after a sub-block": after == ")", "resuming after a sub-sub-block": after == "]"}
    elif seq.task == "music":
        named = {"pitches": np.isin(text, list(set("".join(CHORDS.values()))))}
    elif seq.task == "anbn":
        b_line = np.zeros(text.size, dtype=bool)  # a line's "\n" ends the a's; the b's and their "\n" follow
        is_b = text == "b"
        b_line[is_b] = True
        ends = np.flatnonzero((text == "\n") & np.concatenate(([False], is_b[:-1])))
        b_line[ends] = True
        named = {"b-lines": b_line}
    else:
        return {}
    named["the rest"] = ~np.logical_or.reduce(list(named.values()))
    return named


def generate(task: str, rng: np.random.Generator, size: int | None = None, **options: int) -> TaskSequence:
    """Draw one sequence of ``task`` (seed 000, Section 4) using only ``rng``.

    ``size`` counts lines (alphabet, xor), bars (music) or a^n b^n blocks (anbn);
    None means the paper's size (:data:`PAPER_SIZES`).  Options: xor takes
    ``length`` (the paper's T, default 100); anbn takes ``n_min`` and ``n_max``
    (defaults 1024, 2048); copying and adding count instances and take
    ``length`` (seed 002's T: defaults 2000 and 750).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
    allowed = TASK_OPTIONS[task]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) if allowed else "none"
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for task {task!r}; valid options: {valid}")
    size = PAPER_SIZES[task] if size is None else _positive_int("size", size)
    values = {name: _check_int(name, options.get(name, default)) for name, default in allowed.items()}
    if task == "alphabet":
        return _alphabet_task(rng, size)
    if task == "music":
        return _music_task(rng, size)
    if task == "xor":
        return _xor_task(rng, size, **values)
    if task == "copying":
        return _copying_task(rng, size, **values)
    if task == "adding":
        return _adding_task(rng, size, **values)
    return _anbn_task(rng, size, **values)


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _positive_int(name: str, value: object) -> int:
    value = _check_int(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return value


def _alphabet_task(rng: np.random.Generator, n_lines: int) -> TaskSequence:
    sub_yes, sub_no = math.log2(SUB_BLOCK_PROB), math.log2(1.0 - SUB_BLOCK_PROB)
    subsub_yes, subsub_no = math.log2(SUB_SUB_BLOCK_PROB), math.log2(1.0 - SUB_SUB_BLOCK_PROB)
    upper_log = -math.log2(len(UPPERCASE))
    chars: list[str] = []
    logp: list[float] = []
    pending = 0.0  # log2-probability of the decision the next symbol reveals
    for _ in range(n_lines):
        for letter in LETTERS:
            chars.append(letter)
            logp.append(pending)
            if rng.random() >= SUB_BLOCK_PROB:
                pending = sub_no
                continue
            chars.append("(")
            logp.append(sub_yes)
            pending = 0.0
            for digit in DIGITS:
                chars.append(digit)
                logp.append(pending)
                if rng.random() >= SUB_SUB_BLOCK_PROB:
                    pending = subsub_no
                    continue
                letters = rng.integers(0, len(UPPERCASE), size=SUB_SUB_BLOCK_LENGTH)
                chars.extend(["[", *(UPPERCASE[i] for i in letters), "]"])
                logp.extend([subsub_yes, *([upper_log] * SUB_SUB_BLOCK_LENGTH), 0.0])
                pending = 0.0
            chars.append(")")
            logp.append(pending)
            pending = 0.0
        chars.append("\n")
        logp.append(pending)
        pending = 0.0
    return _sequence("alphabet", ALPHABET_ALPHABET, "".join(chars), logp)


def _rhythm_template(rhythm: tuple[str, ...]) -> list[str | None]:
    """Characters of a bar of ``rhythm``, with None at each pitch slot."""
    template: list[str | None] = []
    for i, duration in enumerate(rhythm):
        template.extend(([NOTE_SEPARATOR] if i else []) + [None] + list(duration))
    return template + list(BAR_END)


def _rhythm_log2_probs(templates: list[list[str | None]], chord_size: int) -> list[np.ndarray]:
    """Per-character true log2-probabilities of a bar, for each rhythm.

    The posterior over rhythms is uniform on those whose template agrees with
    the bar so far (pitches never discriminate rhythms), so a character's
    probability is the fraction of consistent rhythms predicting it, times
    1/chord_size at a pitch slot.
    """
    result = []
    for template in templates:
        consistent = range(len(templates))
        logs = []
        for pos, char in enumerate(template):
            agreeing = [r for r in consistent if pos < len(templates[r]) and templates[r][pos] == char]
            pitch_factor = 1.0 / chord_size if char is None else 1.0
            logs.append(math.log2(len(agreeing) / len(consistent) * pitch_factor))
            consistent = agreeing
        result.append(np.array(logs))
    return result


def _music_task(rng: np.random.Generator, n_bars: int) -> TaskSequence:
    templates = [_rhythm_template(r) for r in RHYTHMS]
    chord_size = len(next(iter(CHORDS.values())))
    bar_logs = _rhythm_log2_probs(templates, chord_size)
    chars: list[str] = []
    logp: list[np.ndarray] = []
    for bar in range(n_bars):
        chord = CHORDS[HARMONY_CYCLE[bar % len(HARMONY_CYCLE)]]
        rhythm = int(rng.integers(len(RHYTHMS)))
        pitches = iter(rng.integers(0, chord_size, size=len(RHYTHMS[rhythm])))
        chars.extend(chord[next(pitches)] if c is None else c for c in templates[rhythm])
        logp.append(bar_logs[rhythm])
    return _sequence("music", MUSIC_ALPHABET, "".join(chars), np.concatenate(logp))


def _xor_task(rng: np.random.Generator, n_lines: int, length: int) -> TaskSequence:
    if length < XOR_MIN_LENGTH:
        raise ValueError(f"xor length must be >= {XOR_MIN_LENGTH}, got {length}")
    space, mark, zero, equals, newline = (XOR_ALPHABET.index(c) for c in " X0=\n")
    max_length = (11 * length) // 10  # floor(1.1 T), exactly
    n_bits = rng.integers(length, max_length + 1, size=n_lines)
    first_end = -(-n_bits // 10)  # ceil(T'/10)
    second_end = -(-n_bits // 2)  # ceil(T'/2)
    p1 = rng.integers(0, first_end)
    p2 = rng.integers(first_end, second_end)
    bits = rng.integers(0, 2, size=int(n_bits.sum()))
    line_length = 2 * n_bits + 3  # marker + bit per bit, then "=", result, "\n"
    line_start = np.concatenate(([0], np.cumsum(line_length)[:-1]))
    bit_start = np.concatenate(([0], np.cumsum(n_bits)[:-1]))
    line_of_bit = np.repeat(np.arange(n_lines), n_bits)
    marker_pos = line_start[line_of_bit] + 2 * (np.arange(bits.size) - bit_start[line_of_bit])
    symbols = np.empty(int(line_length.sum()), dtype=np.int64)
    symbols[marker_pos] = space
    symbols[marker_pos + 1] = zero + bits
    symbols[line_start + 2 * p1] = mark
    symbols[line_start + 2 * p2] = mark
    equals_pos = line_start + 2 * n_bits
    symbols[equals_pos] = equals
    symbols[equals_pos + 1] = zero + (bits[bit_start + p1] ^ bits[bit_start + p2])
    symbols[equals_pos + 2] = newline
    mask = np.zeros(symbols.size)
    mask[equals_pos + 1] = 1.0
    return TaskSequence("xor", XOR_ALPHABET, symbols, mask, np.zeros(symbols.size))


def _anbn_task(rng: np.random.Generator, n_blocks: int, n_min: int, n_max: int) -> TaskSequence:
    if not 1 <= n_min <= n_max:
        raise ValueError(f"anbn needs 1 <= n_min <= n_max, got n_min={n_min}, n_max={n_max}")
    a, b, newline = (ANBN_ALPHABET.index(c) for c in "ab\n")
    symbols, logp = [], []
    for n in rng.integers(n_min, n_max + 1, size=n_blocks):
        emitted = np.arange(n)  # number of "a" before each "a"
        remaining = (n_max - emitted).astype(np.float64)
        a_logp = np.where(emitted >= n_min, np.log2(remaining / (remaining + 1.0)), 0.0)
        symbols.append(np.concatenate((np.full(n, a), [newline], np.full(n, b), [newline])))
        logp.append(np.concatenate((a_logp, [math.log2(1.0 / (n_max - n + 1))], np.zeros(n + 1))))
    symbols_all = np.concatenate(symbols)
    return TaskSequence("anbn", ANBN_ALPHABET, symbols_all, np.ones(symbols_all.size), np.concatenate(logp))


def _copying_task(rng: np.random.Generator, n: int, length: int) -> TaskSequence:
    if length < 1:
        raise ValueError(f"copying length must be >= 1, got {length}")
    digits = rng.integers(1, 9, size=(n, COPY_DIGITS))
    blank, marker = COPY_ALPHABET.index("0"), COPY_ALPHABET.index("9")
    gap = np.concatenate(([marker], np.full(length, blank), [marker]))
    instances = np.concatenate((digits, np.broadcast_to(gap, (n, gap.size)), digits), axis=1)
    mask = np.zeros(instances.shape)
    mask[:, -COPY_DIGITS:] = 1.0
    return TaskSequence("copying", COPY_ALPHABET, instances.ravel(), mask.ravel(), np.zeros(instances.size))


def _adding_task(rng: np.random.Generator, n: int, length: int) -> TaskSequence:
    if length < 2:
        raise ValueError(f"adding length must be >= 2, got {length}")
    half = length // 2
    values = rng.integers(0, 10, size=(n, length))
    first = rng.integers(0, half, size=n)
    second = rng.integers(half, length, size=n)
    rows = np.arange(n)
    steps = values.copy()
    steps[rows, first] += len(ADD_DIGITS)  # "A" + digit
    steps[rows, second] += len(ADD_DIGITS)
    total = values[rows, first] + values[rows, second]
    tail = np.stack((np.full(n, ADD_ALPHABET.index("=")), ADD_ALPHABET.index("a") + total,
                     np.full(n, ADD_ALPHABET.index("\n"))), axis=1)
    instances = np.concatenate((steps, tail), axis=1)
    mask = np.zeros(instances.shape)
    mask[:, length + 1] = 1.0
    return TaskSequence("adding", ADD_ALPHABET, instances.ravel(), mask.ravel(), np.zeros(instances.size))


def adding_baseline_bits() -> float:
    """The adding problem's memoryless baseline: the entropy of the sum of two uniform digits (bits)."""
    p = np.array([10 - abs(s - 9) for s in range(19)]) / 100.0
    return float(-(p * np.log2(p)).sum())


def _sequence(task: str, alphabet: str, text: str, logp) -> TaskSequence:
    symbols = encode(text, alphabet)
    return TaskSequence(task, alphabet, symbols, np.ones(symbols.size), np.asarray(logp, dtype=np.float64))
