"""Range coder: integer frequencies in, bytes out, and back (sans-I/O, Numba).

A carry-propagating range coder with a 32-bit range and a 64-bit low (the
scheme of LZMA's range coder, generalised from bits to frequency tables).
Encoder and decoder narrow the range with the same routine, ``_narrow``; the
decoder mirrors the encoder's renormalisation byte for byte.

The coder state is one int64 array (``STATE_FIELDS``) and the output or input
one uint8 array, so a whole block is coded inside one Numba loop.

Model probabilities become frequencies in :func:`quantize`: every symbol that
can occur gets at least 1 of a total of at most 2^16, so no occurring symbol
ever has an empty range; the cost of that floor is at most
log2(1 / (1 - n/2^16)) bits per symbol for n codes, 0.004 bits for 200.
"""

from __future__ import annotations

import numpy as np

from .jit import inline_kernel, kernel

PRECISION = 16  # frequencies of one distribution sum to at most 2^16
TOP = 1 << 24  # renormalise when the range falls below 2^24
# positions in the coder state array
LOW, RANGE, CACHE, CACHE_SIZE, POS, CODE = range(6)
STATE_FIELDS = 6
_MASK32 = (1 << 32) - 1


def encoder_state() -> np.ndarray:
    st = np.zeros(STATE_FIELDS, dtype=np.int64)
    st[RANGE] = _MASK32
    st[CACHE_SIZE] = 1
    return st


@inline_kernel
def _shift_low(st, out):
    low = st[LOW]
    if low < 0xFF000000 or low > _MASK32:
        carry = low >> 32
        temp = st[CACHE]
        while True:
            out[st[POS]] = (temp + carry) & 0xFF
            st[POS] += 1
            temp = 0xFF
            st[CACHE_SIZE] -= 1
            if st[CACHE_SIZE] == 0:
                break
        st[CACHE] = (low >> 24) & 0xFF
    st[CACHE_SIZE] += 1
    st[LOW] = (low & 0x00FFFFFF) << 8


@inline_kernel
def _narrow(st, start, freq, total):
    """The interval [start, start + freq) of ``total``: returns the change of ``low``."""
    r = st[RANGE] // total
    st[RANGE] = r * freq
    return r * start


@kernel
def encode(st, out, start, freq, total):
    """Code the interval [start, start + freq) out of ``total`` (1 <= freq, start + freq <= total <= 2^16)."""
    st[LOW] += _narrow(st, start, freq, total)
    while st[RANGE] < TOP:
        st[RANGE] <<= 8
        _shift_low(st, out)


@kernel
def finish(st, out):
    """Flush the encoder; returns the number of bytes written."""
    for _ in range(5):
        _shift_low(st, out)
    return st[POS]


def decoder_state(data: np.ndarray) -> np.ndarray:
    """A decoder over ``data`` (the encoder's whole output, uint8)."""
    st = np.zeros(STATE_FIELDS, dtype=np.int64)
    _start_decoding(st, data)
    return st


@kernel
def _start_decoding(st, data):
    """Read the code's first bytes from ``data`` into a zeroed decoder state ``st``."""
    st[RANGE] = _MASK32
    st[POS] = 1  # the encoder's first byte is always 0
    code = 0
    for _ in range(4):
        code = (code << 8) | _byte(data, st[POS])
        st[POS] += 1
    st[CODE] = code


@inline_kernel
def _byte(data, pos):
    """Input byte ``pos``; past the end, zeros (a truncated block then fails its checksum)."""
    return np.int64(data[pos]) if pos < data.shape[0] else np.int64(0)


@kernel
def target(st, total):
    """The value in [0, total) that the next interval must contain (clamped on corrupt input)."""
    v = st[CODE] // (st[RANGE] // total)
    return v if v < total else total - 1


@kernel
def consume(st, data, start, freq, total):
    """Remove the decoded interval [start, start + freq) of ``total`` and renormalise."""
    st[CODE] -= _narrow(st, start, freq, total)
    while st[RANGE] < TOP:
        st[RANGE] <<= 8
        st[CODE] = ((st[CODE] << 8) | _byte(data, st[POS])) & _MASK32
        st[POS] += 1


@kernel
def quantize(pi, first, width, freq):
    """freq[y] = 1 + floor(pi[y] * (2^16 - n)) for y in [first, width), n = width - first; 0 below first.

    Returns the total, at most 2^16.  The floor of 1 keeps every symbol that
    can occur codable whatever the model says.  A probability that is not a
    number (a model whose arithmetic broke down: a file's settings are not
    trusted) counts as 0, so the coder's range never collapses and a decoder
    always terminates; a softmax's probabilities, in [0, 1], are unchanged.
    """
    n = width - first
    scale = float((1 << PRECISION) - n)
    total = 0
    for y in range(first):
        freq[y] = 0
    for y in range(first, width):
        p = pi[y]
        if not p >= 0.0:  # NaN
            p = 0.0
        f = 1 + np.int64(min(p, 1.0) * scale)
        freq[y] = f
        total += f
    return total
