"""exp, expm1, log, log1p, log2, tanh and the logistic function from +, -, x, / and comparisons alone.

A ``.sqd`` file decodes only if the decoder repeats every floating-point
operation of its encoder bit for bit.  IEEE 754 makes +, -, x, /, sqrt and
conversions exact (correctly rounded) on every machine; it makes no such
promise for ``exp`` or ``log``, and the C libraries differ in their last bits
(glibc, musl, macOS, and one glibc release from the next).  So every function
the learner's coding path needs is computed here, from basic operations in a
fixed order, and is the same number on every machine, with any compiler that
does not re-associate or contract (``jit.py``: no ``fastmath``; no
fused multiply-add is formed from separate operations).  The same functions
run as plain Python (``NUMBA_DISABLE_JIT=1``), with the same results, since
Python's floats are IEEE doubles.

Accuracy: within a few units in the last place of the correctly rounded
result over the whole double range (``tests/test_elementary.py`` measures it
against 50-digit decimal arithmetic); learning needs
far less, decoding needs only that it be the same everywhere.

Methods (textbook argument reduction; every constant is written out or
computed exactly at import):

* exp: x = (64k + j) ln2/64 + r with 0 <= j < 64 and |r| <= ln2/128 (Cody
  and Waite: ln2 split in two so that n * LN2_HI / 64 is exact), then
  exp(x) = 2^k (T_j + T_j p) with T_j = 2^(j/64) (a table computed exactly at
  import, with :mod:`decimal`, and pinned by its digest in the tests) and
  p = expm1(r) by its Taylor series to r^6/6! (truncation below 2^-64).
* expm1: x = k ln2 + r with |r| <= ln2/2, expm1(r) by its Taylor series to
  r^13/13! (truncation below 2^-56 relative), and
  expm1(x) = (2^k - 1) + 2^k expm1(r); 2^k is an exact table entry.
* log: x = 2^e m with sqrt(2)/2 <= m < sqrt(2), e and m read from the bits
  of x (exact); m = c_j (1 + r) with c_j the centre of m's bucket of width
  1/128 (1 for the two buckets around 1), r = (m - c_j) / c_j with
  |r| <= 1/90, and log x = e ln2 + log c_j + log1p(r): log c_j a pair of
  doubles from a table computed exactly at import (pinned in the tests),
  log1p(r) by its series to r^8/8.
* log1p(x) = log(u) x / (u - 1) with u = 1 + x (exact when u - 1 = x; the
  factor corrects the rounding of u otherwise).
* tanh: 1 - 2 / (expm1(2|x|) + 2) for |x| >= 1, -t / (t + 2) with
  t = expm1(-2|x|) below, the sign restored; logistic(v) = 1 / (1 + exp(-v)).

The coding path chooses between these and the C library's functions (which
format 1 files were written with) at compile time, through a marker array's
dtype: see :func:`exp_of` and ``docs/format.md``.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ..jit import inline_kernel, kernel

INF = float("inf")
LN2_HI = 6.93147180369123816490e-01  # ln 2 rounded to 32 significant bits: k * LN2_HI is exact for |k| < 2^20
LN2_LO = 1.90821492927058770002e-10  # ln 2 - LN2_HI
INV_LN2 = 1.44269504088896338700e+00  # 1 / ln 2
HALF_LN2 = 0.34657359027997264  # ln2 / 2
SQRT2 = 1.4142135623730951
EXP_MAX = 709.782712893384  # above: exp overflows
EXP_MIN = -745.1332191019412  # below: exp is 0
TINY = 2.2250738585072014e-308  # the smallest normal double

# 2^k for k = -1074 .. 1023, each exact (ldexp only moves the exponent); POW2[k + POW2_BIAS] = 2^k
POW2_BIAS = 1074
POW2 = np.array([math.ldexp(1.0, k) for k in range(-POW2_BIAS, 1024)])

# T_j = 2^(j/64), j = 0 .. 63, each the double nearest to its 50-digit decimal value (exact and the same on
# every machine: decimal is integer arithmetic); tests/test_elementary.py pins their digest
EXP_TABLE_BITS = 6


def _exp_table() -> np.ndarray:
    with localcontext() as ctx:
        ctx.prec = 50
        return np.array([float(Decimal(2) ** (Decimal(j) / (1 << EXP_TABLE_BITS)))
                         for j in range(1 << EXP_TABLE_BITS)])


EXP_TABLE = _exp_table()
INV_LN2_64 = INV_LN2 * 64.0  # exact: a power of two
LN2_HI_64 = LN2_HI / 64.0
LN2_LO_64 = LN2_LO / 64.0

# log: sqrt(2)/2 <= m < sqrt(2) falls in bucket j = floor((m - 90/128) * 128), of centre c_j = 90/128 + (j + 1/2)/128
# (exact), except the two buckets around 1, whose centre is 1 (so that log m near 0 loses no digit); log c_j as
# a pair (hi, lo) of doubles from its 50-digit decimal value, 1/c_j correctly rounded.
LOG_TABLE_START = 90.0 / 128.0
LOG_TABLE_STEPS = 128.0


def _log_tables() -> tuple[np.ndarray, ...]:
    centres = [1.0 if j in (37, 38) else (90 + j + 0.5) / 128.0 for j in range(93)]
    hi, lo = [], []
    with localcontext() as ctx:
        ctx.prec = 50
        for c in centres:
            exact = Decimal(c).ln()
            hi.append(float(exact))
            lo.append(float(exact - Decimal(hi[-1])))
    return np.array(centres), np.array([1.0 / c for c in centres]), np.array(hi), np.array(lo)


LOG_CENTRE, LOG_INVERSE, LOG_HI, LOG_LO = _log_tables()
# -1^(n+1) / n for n = 2 .. 8 (log1p's series after r)
_G2, _G3, _G4, _G5, _G6, _G7, _G8 = ((-1.0) ** (n + 1) / n for n in range(2, 9))

# 1 / n! for n = 2 .. 13 (Taylor coefficients of expm1 after r)
_F2, _F3, _F4, _F5, _F6, _F7, _F8, _F9, _F10, _F11, _F12, _F13 = (1.0 / math.factorial(n) for n in range(2, 14))


FRACTION_MASK = (1 << 52) - 1
ONE_BITS = 1023 << 52  # the bits of 1.0


def _bits_of(x: float) -> int:
    """The IEEE 754 bits of a double, as an int64 (a reinterpretation, not an arithmetic operation)."""
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _double_of(bits: int) -> float:
    """The double whose IEEE 754 bits are ``bits``."""
    return struct.unpack("<d", struct.pack("<q", bits))[0]


@intrinsic
def _bitcast_to_int(typingctx, x):
    if x != types.float64:
        return None
    return types.int64(types.float64), lambda context, builder, sig, args: builder.bitcast(args[0], ir.IntType(64))


@intrinsic
def _bitcast_to_double(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.int64)
        return builder.bitcast(value, ir.DoubleType())
    return types.float64(bits), codegen


@overload(_bits_of)
def _bits_of_compiled(x):
    return lambda x: _bitcast_to_int(x)


@overload(_double_of)
def _double_of_compiled(bits):
    return lambda bits: _bitcast_to_double(bits)


@inline_kernel
def _expm1_small(r):
    """expm1(r) for |r| <= ln2/2: r + r^2 (1/2! + r (1/3! + ... + r/13!)), Horner, leading r kept exact."""
    q = _F12 + r * _F13
    q = _F11 + r * q
    q = _F10 + r * q
    q = _F9 + r * q
    q = _F8 + r * q
    q = _F7 + r * q
    q = _F6 + r * q
    q = _F5 + r * q
    q = _F4 + r * q
    q = _F3 + r * q
    q = _F2 + r * q
    return r + (r * r) * q


@inline_kernel
def _nearest(t):
    """The integer nearest to t (halves away from zero), by truncating conversion."""
    if t >= 0.0:
        return int(t + 0.5)
    return -int(0.5 - t)


@inline_kernel
def exp(x):
    """e^x."""
    if x != x:
        return x
    if x > EXP_MAX:
        return INF
    if x < EXP_MIN:
        return 0.0
    n = _nearest(x * INV_LN2_64)
    r = (x - n * LN2_HI_64) - n * LN2_LO_64
    k = n >> EXP_TABLE_BITS  # floor(n / 64), also for negative n
    t = EXP_TABLE[n - (k << EXP_TABLE_BITS)]
    p = r + (r * r) * (_F2 + r * (_F3 + r * (_F4 + r * (_F5 + r * _F6))))
    y = t + t * p
    if k > 1023:  # 2^k itself would overflow: scale in two exact steps
        return (y * 2.0) * POW2[k - 1 + POW2_BIAS]
    if k < -1000:  # a subnormal result: one exact scaling, then one rounding
        return (y * POW2[k + 64 + POW2_BIAS]) * POW2[-64 + POW2_BIAS]
    return y * POW2[k + POW2_BIAS]


@inline_kernel
def expm1(x):
    """e^x - 1, accurate near 0."""
    if x != x:
        return x
    if -HALF_LN2 <= x <= HALF_LN2:
        return _expm1_small(x)
    if x > EXP_MAX:
        return INF
    if x < -40.0:  # e^x below 2^-57: the result rounds to -1
        return -1.0
    k = _nearest(x * INV_LN2)
    r = (x - k * LN2_HI) - k * LN2_LO
    p = _expm1_small(r)
    if k > 1023:
        return ((1.0 + p) * 2.0) * POW2[k - 1 + POW2_BIAS]
    two_k = POW2[k + POW2_BIAS]
    return (two_k - 1.0) + two_k * p


@inline_kernel
def _log1p_small(r):
    """log(1 + r) for |r| <= 1/90: r - r^2/2 + r^3/3 - ... - r^8/8 (truncation below 2^-59 relative)."""
    q = _G7 + r * _G8
    q = _G6 + r * q
    q = _G5 + r * q
    q = _G4 + r * q
    q = _G3 + r * q
    q = _G2 + r * q
    return r + (r * r) * q


@inline_kernel
def log(x):
    """The natural logarithm; -inf at 0, nan below."""
    if not x > 0.0:  # zero, negative or nan
        if x == 0.0:
            return -INF
        return math.nan if x == x else x
    if x == INF:
        return x
    e = 0
    if x < TINY:  # subnormal: make it normal first (exact)
        x *= POW2[54 + POW2_BIAS]
        e = -54
    bits = _bits_of(x)  # x = 2^(E - 1023) 1.fraction: e from E, then x / 2^e with E set to 1023 (exact)
    e += (bits >> 52) - 1023
    m = _double_of((bits & FRACTION_MASK) | ONE_BITS)
    if m >= SQRT2:  # now 1 <= m < 2: centre it, sqrt(2)/2 <= m < sqrt(2)
        m *= 0.5
        e += 1
    j = int((m - LOG_TABLE_START) * LOG_TABLE_STEPS)
    r = (m - LOG_CENTRE[j]) * LOG_INVERSE[j]  # m - c exact (Sterbenz); r = m/c - 1 to a rounding or two
    hi = e * LN2_HI + LOG_HI[j]  # e * LN2_HI is exact
    return hi + ((e * LN2_LO + LOG_LO[j]) + _log1p_small(r))


@inline_kernel
def log1p(x):
    """log(1 + x), accurate near 0."""
    u = 1.0 + x
    if u == 1.0:
        return x
    if u == INF:
        return u
    return log(u) * (x / (u - 1.0))


@inline_kernel
def log2(x):
    """The base-2 logarithm (log(x) / ln 2; within a few units in the last place)."""
    return log(x) * INV_LN2


@inline_kernel
def tanh(x):
    """The hyperbolic tangent."""
    if x != x:
        return x
    ax = abs(x)
    if ax >= 22.0:  # 1 - tanh(22) < 2^-63
        t = 1.0
    elif ax >= 1.0:
        t = 1.0 - 2.0 / (expm1(2.0 * ax) + 2.0)
    elif ax < 3.725290298461914e-09:  # 2^-28: tanh(x) = x to double precision
        return x
    else:
        u = expm1(-2.0 * ax)
        t = -u / (u + 2.0)
    return t if x >= 0.0 else -t


@inline_kernel
def logistic(v):
    """1 / (1 + e^-v); e^v itself below v = -40, where 1 + e^v rounds to 1 (and e^-v may overflow)."""
    if v < -40.0:
        return exp(v)
    return 1.0 / (1.0 + exp(-v))


@kernel
def atanh(y):
    """The inverse hyperbolic tangent (|y| < 1): log((1 + y) / (1 - y)) / 2, as log1p(2y + 2y^2 / (1 - y)) / 2
    for |y| < 1/2 (2y exact, the small part rounded); beyond, 1 + y (y < 0) or 1 - y (y > 0) is exact."""
    if -0.5 < y < 0.5:
        t = y + y
        return 0.5 * log1p(t + t * y / (1.0 - y))
    return 0.5 * log((1.0 + y) / (1.0 - y))


# ---------------------------------------------------------------------------------------------------
# The numerics a learner runs with, chosen at compile time.
#
# A learner's state carries ``numerics``, an empty array whose dtype names the functions its kernels use:
# float64 for the functions above (IEEE, every format since 2), float32 for the C library's (format 1,
# kept so those files still decode).  Numba compiles one specialisation per dtype; the dispatching
# functions below resolve at compile time, so a kernel compiled for IEEE numerics contains no call
# to the C library at all (tests/test_numerics_ir.py reads its LLVM IR).

IEEE = "ieee"
LIBM = "libm"
NUMERICS = {IEEE: np.float64, LIBM: np.float32}


def numerics_marker(numerics: str) -> np.ndarray:
    """The empty array that selects ``numerics`` ("ieee" or "libm") in every kernel it is passed to."""
    return np.zeros(0, dtype=NUMERICS[numerics])


def _libm(numerics) -> bool:  # plain-Python path (NUMBA_DISABLE_JIT)
    return numerics.dtype == np.float32


def _libm_type(numerics) -> bool:  # compile time
    return numerics.dtype == types.float32


def _choose(name: str, doc: str, libm, ieee):
    """``name(numerics, x)``: ``libm(x)`` (plain Python, compiled here) for the C library's numerics,
    ``ieee(x)`` (a kernel above) for seqd's.

    Compiled, the choice is made once, at compile time, from the marker's
    dtype (an ``overload``); as plain Python (``NUMBA_DISABLE_JIT=1``) at each call.
    """
    libm = inline_kernel(libm)

    def chosen(numerics, x):
        return libm(x) if _libm(numerics) else ieee(x)

    @overload(chosen, jit_options=dict(fastmath=False, error_model="numpy"))
    def _typed(numerics, x):
        return (lambda numerics, x: libm(x)) if _libm_type(numerics) else (lambda numerics, x: ieee(x))

    chosen.__name__ = chosen.__qualname__ = name
    chosen.__doc__ = doc
    return chosen


exp_of = _choose("exp_of", "e^x under ``numerics``.", lambda x: math.exp(x), exp)
log_of = _choose("log_of", "log x under ``numerics``.", lambda x: math.log(x), log)
log1p_of = _choose("log1p_of", "log(1 + x) under ``numerics`` (format 1 computed ``log(1.0 + x)``).",
                   lambda x: math.log(1.0 + x), log1p)
log2_of = _choose("log2_of", "log2 x under ``numerics``.", lambda x: math.log2(x), log2)
tanh_of = _choose("tanh_of", "tanh x under ``numerics``.", lambda x: math.tanh(x), tanh)
logistic_of = _choose("logistic_of", "1 / (1 + e^-v) under ``numerics``.", lambda v: 1.0 / (1.0 + math.exp(-v)),
                      logistic)
