"""The mixer's shared weight sets beside u: which row of each set the next symbol selects.

The mixer (``mixer.py``) adds to each source's weight one row
of each shared set, stacked in ``OnlineState.fsel_w``: the field set's rows
(``field_selected_weights``), then the order-2 set's
(``order2_selected_weights``), then the unit set's
(``unit_selected_weights``).  ``selecting_rows`` counts them and
``set_rows`` picks, before each prediction, the row of each set present.
"""

from __future__ import annotations

from ..jit import inline_kernel
from ..kernels.activation import LOGISTIC
from .sources import FIELD, FIELD_SLOTS, NEWLINE, POS, SAME
from ..kit.hashing import history

# the field-selected weights' rows: (field number: the first field_selecting_fields one by one, the later ones
# with the last) x (field so far the previous line's: 0/1) x (position in the field: the first
# field_selecting_positions - 1 one by one, the later ones together) x (the last symbol: digit, letter,
# space/tab/newline, anything else); with 1 field and 4 positions, the 32 rows of presets bytes-5 to bytes-7
# the order-2-selected weights' rows: (257 (x_1 mod 257) + (x_2 mod 257)) mod ORDER2_MODULUS, x_1 the last symbol and
# x_2 the one before (EMPTY before the stream: 256); a prime below 4096 spreads the pairs of bytes over the rows
ORDER2_SELECTING_ROWS = 4096
ORDER2_MODULUS = 4093
# the unit-selected weights' rows: the signs of the first min(units, UNIT_SELECTING_UNITS) units' activities
UNIT_SELECTING_UNITS = 8


def selecting_rows(field_fields: int, field_positions: int, order2: bool, units: int = 0) -> int:
    """Rows of the shared weight sets beside u (``fsel_w``): the field set's (none with ``field_fields`` 0), the
    order-2 set's, then the unit set's (2^units, none with ``units`` 0)."""
    return field_fields * 2 * field_positions * 4 + ORDER2_SELECTING_ROWS * order2 + ((1 << units) if units else 0)


@inline_kernel
def unit_centre(activation_code):
    """The activity that splits a unit's range in two: 0 for tanh, 1/2 for the logistic (``kernels.activation``)."""
    return 0.5 if activation_code == LOGISTIC else 0.0


@inline_kernel
def set_rows(src, a_t, fsel_row, field_fields, field_positions, order2, units, centre):
    """Each shared weight set's row for the next symbol into ``fsel_row``, in the order of their rows in
    ``fsel_w`` (``selecting_rows``): the field set's, the order-2 set's, the unit set's.  The line and
    field structure is read from the sources ``src`` (``sources.Sources``).

    ``a_t`` is the recurrent units' activities now (unit 0, the bias, first); the unit set's row is
    sum_i 2^(i-1) [a_i > centre] over units 1 ... ``units``, ``centre`` the middle of the activation's range
    (``unit_centre``: 0 for tanh, 1/2 for the logistic).
    """
    hist, ctx_int, fields = src.hist, src.ctx_int, src.fields
    j = 0
    base = 0
    if field_fields > 0:
        fsel_row[0] = _field_selecting_row(hist, ctx_int, fields, field_fields, field_positions)
        j = 1
        base = field_fields * 2 * field_positions * 4
    if order2:
        fsel_row[j] = base + _order2_selecting_row(hist, ctx_int)
        j += 1
        base += ORDER2_SELECTING_ROWS
    if units > 0:
        pattern = 0
        for i in range(units):
            if a_t[i + 1] > centre:
                pattern += 1 << i
        fsel_row[j] = base + pattern


@inline_kernel
def _order2_selecting_row(hist, ctx_int):
    """The order-2-selected weights' row for the next symbol (ORDER2_SELECTING_ROWS; the last two symbols)."""
    pos = ctx_int[POS]
    return (257 * (history(hist, pos, 1) % 257) + history(hist, pos, 2) % 257) % ORDER2_MODULUS


@inline_kernel
def _field_selecting_row(hist, ctx_int, fields, n_fields, n_positions):
    """The field-selected weights' row for the next symbol (``selecting_rows``; the field column's state)."""
    last = history(hist, ctx_int[POS], 1)
    kind = 3
    if 48 <= last <= 57:
        kind = 0
    elif (65 <= last <= 90) or (97 <= last <= 122):
        kind = 1
    elif last == 32 or last == 9 or last == NEWLINE:
        kind = 2
    f = min(ctx_int[FIELD], FIELD_SLOTS - 1)
    position = min(ctx_int[POS] - fields[0, f], n_positions - 1)
    return ((min(f, n_fields - 1) * 2 + fields[0, SAME]) * n_positions + position) * 4 + kind
