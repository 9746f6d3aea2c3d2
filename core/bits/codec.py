"""Coding a block of bytes with the bitwise model (``docs/format.md``, format 4).

Each bit is coded with the 16-bit probability p16 / 2^16 of a 1 that the
model gives it, the model learning as it goes; the decoder mirrors the
encoder bit for bit.  The coder is a binary arithmetic coder over a 32-bit
interval [x1, x2] (the scheme of the paq family): the split point is
x1 + floor((x2 - x1) p16 / 2^16), computed exactly in 64-bit integers, a 1
takes the lower part, and each leading byte that x1 and x2 share is shifted
out.  Its loss is the rounding of the split point, about 2^-16 of a bit per
bit once the interval is wide; the flush writes x1's 4 bytes.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel
from .mixing import claim, find_buckets, learn_bit, probability
from .model import end_byte, start_byte

X1, X2, POS, CODE = range(4)  # the coder state: the interval, the next output (or input) byte, the decoder's code
STATE_FIELDS = 4
_MASK32 = (1 << 32) - 1


def max_encoded_bytes(n: int) -> int:
    """An upper bound on the encoder's output for ``n`` bytes: a bit shifts out at most the interval's 4 bytes."""
    return 32 * n + 8


def encoder_state() -> np.ndarray:
    st = np.zeros(STATE_FIELDS, dtype=np.int64)
    st[X2] = _MASK32
    return st


@inline_kernel
def _split(st, p16):
    """The last value of the interval that a 1 takes: x1 + floor((x2 - x1) p16 / 2^16)."""
    r = st[X2] - st[X1]
    return st[X1] + (r >> 16) * p16 + (((r & 0xFFFF) * p16) >> 16)


@inline_kernel
def _narrow(st, p16, y):
    """Keep bit y's part of the interval: [x1, split] for a 1, [split + 1, x2] for a 0 (both non-empty: p16 is
    at least 1 and below 2^16)."""
    mid = _split(st, p16)
    if y == 1:
        st[X2] = mid
    else:
        st[X1] = mid + 1


@kernel
def encode_bit(st, out, p16, y):
    """Code bit y, whose probability of being 1 is p16 / 2^16 (1 <= p16 <= 2^16 - 1)."""
    _narrow(st, p16, y)
    while ((st[X1] ^ st[X2]) & 0xFF000000) == 0:
        out[st[POS]] = np.uint8(st[X2] >> 24)
        st[POS] += 1
        st[X1] = (st[X1] << 8) & _MASK32
        st[X2] = ((st[X2] << 8) & _MASK32) | 255


@kernel
def finish(st, out):
    """Flush the encoder (x1's 4 bytes: the decoder's code then lies in the last interval); returns the number
    of bytes written."""
    for _ in range(4):
        out[st[POS]] = np.uint8(st[X1] >> 24)
        st[POS] += 1
        st[X1] = (st[X1] << 8) & _MASK32
    return st[POS]


@inline_kernel
def _input(data, pos):
    """Input byte ``pos``; past the end, zeros (a truncated block then fails its checksum)."""
    return np.int64(data[pos]) if pos < data.shape[0] else np.int64(0)


def decoder_state(data: np.ndarray) -> np.ndarray:
    """A decoder over ``data`` (the encoder's whole output, uint8): its first 4 bytes are the code."""
    st = encoder_state()
    _start(st, data)
    return st


@kernel
def _start(st, data):
    for _ in range(4):
        st[CODE] = (st[CODE] << 8) | _input(data, st[POS])
        st[POS] += 1


@kernel
def decode_bit(st, data, p16):
    """The bit coded with probability p16 / 2^16 of a 1, read from ``data``."""
    y = 1 if st[CODE] <= _split(st, p16) else 0
    _narrow(st, p16, y)
    while ((st[X1] ^ st[X2]) & 0xFF000000) == 0:
        st[X1] = (st[X1] << 8) & _MASK32
        st[X2] = ((st[X2] << 8) & _MASK32) | 255
        st[CODE] = ((st[CODE] << 8) & _MASK32) | _input(data, st[POS])
        st[POS] += 1
    return y


@inline_kernel
def _byte(st, hyper, symbol, cst, buf, decoding):
    """Code byte ``symbol`` (or, ``decoding``, find it from the coder reading ``buf``) and learn it; returns it."""
    start_byte(st, hyper)
    c0 = 1
    for bit in range(7, -1, -1):
        if bit == 3:
            find_buckets(st, hyper, c0)
        p16 = probability(st, hyper, c0, bit)
        if decoding:
            y = decode_bit(cst, buf, p16)
        else:
            y = (symbol >> bit) & 1
            encode_bit(cst, buf, p16, y)
        if bit == 7 or bit == 3:
            claim(st, c0)
        learn_bit(st, hyper, bit, y)
        c0 = c0 * 2 + y
    symbol = c0 - 256
    end_byte(st, hyper, symbol)
    return symbol


@kernel
def encode_bytes(st, hyper, x, cst, out):
    """Code the bytes ``x`` into ``out`` (coder state ``cst``), learning each."""
    for i in range(x.shape[0]):
        _byte(st, hyper, x[i], cst, out, False)


@kernel
def decode_bytes(st, hyper, data, cst, out):
    """Decode ``out.shape[0]`` bytes from ``data`` (coder state ``cst``) into ``out``, learning each; returns how
    many were decoded before the payload ran out (a damaged block)."""
    for i in range(out.shape[0]):
        if cst[POS] > data.shape[0]:  # past the payload: it cannot hold the rest
            return i
        out[i] = _byte(st, hyper, 0, cst, data, True)
    return out.shape[0]
