"""The learner's snapshot format: versioned, checksummed, and restored bit for bit.

A snapshot is a header (magic, format version, length of a JSON description:
the configuration and each array's name, dtype and shape), then every array
of :class:`OnlineState` in little-endian order, then a CRC-32 of all that.
Restoring checks everything the kernels rely on without bounds checks, so a
damaged or forged snapshot is a clear ``ValueError``, never a crash
(``docs/format.md``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import zlib

import numpy as np

from ..arrays_snapshot import BytesReader, HistoryReader, restore_history, ring_views, stored_shape
from ..kernels.elementary import numerics_marker
from .config import OnlineConfig
from .sources import (ABOVE, EMPTY, FIELD, FIELD_SLOTS, LINE_START, MATCH_LEN, MATCH_PTR,
                      NNZ, ORDER0_TOTAL, POS, PREV_LINE_LEN, PREV_LINE_START, SAME)
from .maps import MAP_COUNT_LIMIT, MAP_KNOT, MAP_POINTS, MAP_ROW_A, MAP_ROW_B, MAP_TOP
from ..kit.numbers import (AFTER, CHANGE, LAST, LENGTH, N_KEYED, N_ON_TRACK, N_PREDICTED, N_RUN, N_VALUE,
                          NUMBER_BUCKETS, NUMBER_DIGITS, NUMBER_STREAK, STREAK, TAG)
from .numbers import N_BUCKET, N_STREAK, N_VOTED
from ..kit.growth import BITS, TAKEN, initial_bits
from .state import ACTIVE, GROWING, WINDOW_POS, OnlineState, grows, state_nbytes, state_shapes
from ..kit.memory import table_array

FORMAT_MAGIC = b"SEQDLRN\x00"
FORMAT_VERSION = 10  # 2: the numerics marker (version 1 restores with 'ieee'); 3: the mixer's arrays; 4: fields;
# 5: followers, and the field column's "same so far" part; 6: the field-selected weights; 7: the number source;
# 8: the probability maps; 9: the credit beyond the window; 10: the history as the symbols seen (or kept
# elsewhere), tables that grow stored as far as they have grown, and their sizes (grown)
NEW_IN_3 = ("sel_w", "sel_P", "sel_h", "sel_updates", "sel_row")  # the selected weights' arrays (empty without them)
NEW_IN_4 = ("fields",)  # the field column's field starts
NEW_IN_5 = ("followers",)  # the indirect source's table
NEW_IN_6 = ("fsel_w", "fsel_h", "fsel_row")  # the field-selected weights
NEW_IN_7 = ("number_table", "number_int", "number_digits", "number_stats")  # the number source
NEW_IN_8 = ("maps", "map_counts", "map_at", "map_frac", "coded")  # the probability maps
NEW_IN_9 = ("credit", "credit_scale")  # the forward sensitivities (credit.py)
NEW_IN_10 = ("grown",)  # the sizes of the tables that grow (growth.py)
# what each version added: its arrays, and the setting that needs them (a snapshot before it had neither)
ADDED = ((3, NEW_IN_3, "selected_weights", "a mixer"), (4, NEW_IN_4, "field_column_context", "a field column source"),
         (5, NEW_IN_5, "indirect_context", "an indirect source"),
         (6, NEW_IN_6, "field_selected_weights", "field-selected weights"),
         (7, NEW_IN_7, "number_context", "a number source"),
         (8, NEW_IN_8, "probability_maps", "probability maps"),
         (9, NEW_IN_9, "credit_horizon", "credit beyond the window"),
         (10, NEW_IN_10, "table_growth", "tables that grow"))
# settings whose source changed meaning in a version: an older snapshot using them would continue differently
CHANGED = ((5, "field_column_context", "the field column of seqd 0.3, whose contexts this seqd no longer forms"),)

_HEADER = struct.Struct("<8sII")  # magic, version, header length


def to_bytes(config: OnlineConfig, state: OnlineState) -> bytes:
    """Versioned, checksummed snapshot: restoring it continues the stream bit for bit."""
    return b"".join(snapshot_parts(config, state))


def snapshot_parts(config: OnlineConfig, state: OnlineState, history: bool = True) -> list[memoryview]:
    """The snapshot of :func:`to_bytes` as a list of buffers to be written in turn: views of the state,
    valid while nothing learns (a thread that writes tens of megabytes of it does not hold the GIL for a
    copy).  The history ring is stored as the symbols it holds, oldest first, and a table that grows as far as
    it has grown (:func:`stored_views`).  ``history=False`` leaves the history out: it is kept elsewhere,
    append-only (a stream's history file), and :func:`from_stream` asks for it (``HistoryReader``)."""
    t = int(state.ctx_int[POS]) if state.ctx_int.size else 0
    listing = []
    for name in OnlineState._fields:
        array = getattr(state, name)
        views = stored_views(name, array, t, state.grown, not history)
        listing.append((name, array, views))
    held = sum(len(v) for v in listing[OnlineState._fields.index("hist")][2])
    meta = {"config": dataclasses.asdict(config), "history": {"held": held, "elsewhere": not history},
            "arrays": [[name, array.dtype.newbyteorder("<").str, list(stored_shape(array, views))]
                       for name, array, views in listing]}
    text = json.dumps(meta, sort_keys=True).encode()
    parts = [memoryview(_HEADER.pack(FORMAT_MAGIC, FORMAT_VERSION, len(text)) + text)]
    for _, _, views in listing:
        parts.extend(memoryview(np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"), copy=False)).reshape(-1)
                                .view(np.uint8)) for v in views)
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return parts + [memoryview(struct.pack("<I", crc))]


def stored_views(name: str, array: np.ndarray, t: int, grown: np.ndarray, elsewhere: bool = False
                 ) -> list[np.ndarray]:
    """The parts of the state's ``array`` that a snapshot stores, as contiguous views in the order they are
    stored: the whole array, but for the history ring, which holds the symbols from position
    t - min(t, H) on, oldest first (none if it is kept elsewhere), and the tables that grow (``grown``),
    each source's table as far as it has grown."""
    if name == "hist" and array.size:
        n = 0 if elsewhere else min(t, array.shape[0])
        return ring_views(array, t - n, n)
    if name in GROWING and grown.size:
        if name == "match_table":
            return [array[:1 << int(grown[-1, BITS])]] if array.size else [array]
        return [array[s, :1 << int(grown[s, BITS])] for s in range(array.shape[0])]
    return [array]


def from_bytes(data: bytes, history: HistoryReader | None = None) -> tuple[OnlineConfig, OnlineState]:
    """Inverse of :func:`to_bytes`; every inconsistency is a clear ``ValueError``."""
    view = memoryview(bytes(data) if not isinstance(data, (bytes, bytearray, memoryview)) else data).cast("B")
    reader = BytesReader(view)
    return from_stream(reader.read_into, reader.read, history=history)


def from_stream(read_into, read, limit: int | None = None, history: HistoryReader | None = None
                ) -> tuple[OnlineConfig, OnlineState]:
    """:func:`from_bytes` of a snapshot that arrives in pieces (an inflating reader): each array is filled
    where it will live, with no copy of the whole snapshot in between; the same checks, and the checksum
    computed as the bytes come.  ``read(n)`` returns the next ``n`` bytes (fewer only at the end);
    ``read_into(buffer)`` fills a writable byte buffer and returns how many bytes it got.  A snapshot whose
    arrays would take more than ``limit`` bytes is refused before any is allocated.  A snapshot whose
    history is kept elsewhere gets it from ``history``."""
    head = read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise ValueError("learner snapshot is truncated")
    version, hlen = _version(head)
    text = read(hlen)
    if len(text) < hlen:
        raise ValueError("learner snapshot is truncated")
    crc = zlib.crc32(text, zlib.crc32(head))
    meta, config = _description(text)
    try:
        listed = [(name, np.dtype(dtype), tuple(int(n) for n in shape)) for name, dtype, shape in meta["arrays"]]
        kept = meta.get("history", {"held": None, "elsewhere": False})
        held, elsewhere = kept["held"], bool(kept["elsewhere"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"learner snapshot header is invalid: {exc}") from None
    size = sum(math.prod(shape) * dt.itemsize for _, dt, shape in listed)
    if limit is not None and max(size, state_nbytes(config)) > limit:
        raise ValueError(f"learner snapshot holds {max(size, state_nbytes(config))} bytes of arrays, more than its "
                         f"configuration holds ({limit})")
    shapes = state_shapes(config)
    no_growth = np.zeros((0, 2), np.int64)
    names = [name for name, _, _ in listed]
    if names != [name for name in OnlineState._fields if name in names]:
        raise ValueError("learner snapshot does not hold the expected arrays")
    arrays = {}
    for name, dt, shape in listed:
        if name not in shapes:
            raise ValueError(f"learner snapshot array {name!r} is not what its configuration holds")
        full, want = shapes[name]
        # before version 10 a history was uint16 whatever the alphabet: one that fits a byte is converted below
        widened = version < 10 and name == "hist" and dt.newbyteorder("=") == np.uint16 and want == np.uint8
        if dt.newbyteorder("=") != want and not widened:
            raise ValueError(f"learner snapshot array {name!r} is {dt.newbyteorder('=')}{list(shape)}, its "
                             f"configuration holds {want}")
        out = np.zeros(full, np.uint16) if widened else table_array(full, want, huge=not grows(config, name))
        if version < 10:
            views = [out]
        else:
            t = int(arrays["ctx_int"][POS]) if "ctx_int" in arrays and arrays["ctx_int"].size else 0
            views = stored_views(name, out, t, arrays.get("grown", no_growth), elsewhere)
        if stored_shape(out, views) != shape:  # (a history's length follows the position, a table's its size)
            raise ValueError(f"learner snapshot is damaged or inconsistent: its array {name!r} is "
                             f"{dt.newbyteorder('=')}{list(shape)}, expected {want}{list(stored_shape(out, views))}")
        for v in views:
            raw = memoryview(v.reshape(-1).view(np.uint8))
            if read_into(raw) < len(raw):
                raise ValueError("learner snapshot is truncated")
            crc = zlib.crc32(raw, crc)
            if not np.little_endian:
                v.byteswap(inplace=True)
        if widened:
            if out.size and int(out.max()) > np.iinfo(np.uint8).max:
                raise _inconsistent(f"the history holds symbol {int(out.max())}, outside the alphabet")
            out = out.astype(np.uint8)
        if name == "grown" and out.size:  # the tables after it are read as far as these sizes say: not beyond
            _check_table_sizes(config, out)
        arrays[name] = out
    tail = read(5)
    if len(tail) != 4:
        raise ValueError("learner snapshot is truncated" if len(tail) < 4 else "learner snapshot is followed by other bytes")
    if struct.unpack("<I", tail)[0] != crc:
        raise ValueError("learner snapshot is damaged (checksum mismatch)")
    if version >= 10 and arrays.get("hist", no_growth).size:
        if held is None:  # every format with a history ring says how much of it the snapshot holds
            raise ValueError("learner snapshot header is invalid: it does not say how much history it holds")
        restore_history(arrays["hist"], int(arrays["ctx_int"][POS]), "learner", held, elsewhere, history)
    return config, _state_of(config, version, arrays)


def _version(head: bytes) -> tuple[int, int]:
    """The format version and the description's length, from a snapshot's first bytes (checked)."""
    magic, version, hlen = _HEADER.unpack_from(head)
    if magic != FORMAT_MAGIC:
        raise ValueError("not a seqd learner snapshot (wrong magic)")
    if version > FORMAT_VERSION:
        raise ValueError(f"learner snapshot format {version} is newer than this seqd understands ({FORMAT_VERSION})")
    return version, hlen


def _description(text: bytes) -> tuple[dict, OnlineConfig]:
    """A snapshot's JSON description and the configuration it names."""
    try:
        meta = json.loads(text)
        return meta, OnlineConfig.from_settings(meta["config"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"learner snapshot header is invalid: {exc}") from None


def _state_of(config: OnlineConfig, version: int, arrays: dict) -> OnlineState:
    """The state from a snapshot's arrays (owned, writable, native order), after every check."""
    if version == 1 and "numerics" not in arrays:  # before numerics existed: seqd's own from now on
        arrays["numerics"] = numerics_marker(config.numerics)
    shapes = state_shapes(config)  # what the configuration's state holds, computed without allocating it
    for added, names, setting, what in ADDED:  # arrays a snapshot older than them lacks: empty without their setting
        if version < added and not set(names) & set(arrays):
            if getattr(config, setting):
                raise ValueError(f"learner snapshot format {version} cannot hold {what} ({setting})")
            arrays.update({name: np.zeros(*shapes[name]) for name in names})
    for changed, setting, what in CHANGED:
        if version < changed and getattr(config, setting):
            raise ValueError(f"learner snapshot format {version} holds {what} ({setting})")
    if set(arrays) != set(OnlineState._fields):
        raise ValueError("learner snapshot does not hold the expected arrays")
    state = OnlineState(**{name: arrays[name] for name in OnlineState._fields})
    for name, (shape, dtype) in shapes.items():
        got = getattr(state, name)
        if got.shape != shape or got.dtype != dtype:
            raise ValueError(f"learner snapshot array {name!r} is {got.dtype}{list(got.shape)}, "
                             f"expected {dtype}{list(shape)}")
    for name in ("w", "tau", "h0", "hd", "metric", "V", "a", "reals", "sel_w", "sel_P", "sel_h", "fsel_w", "fsel_h",
                 "maps", "map_counts", "map_frac", "credit", "credit_scale"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"learner snapshot holds a non-finite value in {name!r}")
    _check_indices(config, state)
    return state


def _inconsistent(what: str) -> ValueError:
    """The error for a snapshot whose arrays could not have been written by a learner."""
    return ValueError(f"learner snapshot is inconsistent: {what}")


def _counts_out_of_range(stats: np.ndarray, limit: int) -> bool:
    """Whether hit counts (``stats[..., 0, :]`` hits, ``stats[..., 1, :]`` tries; ``hits.credit``) are impossible."""
    hits, tries = stats[..., 0, :], stats[..., 1, :]
    return bool(np.any(hits < 0) or np.any(hits > tries) or np.any(tries >= max(limit, 1)))


def _check_indices(config: OnlineConfig, state: OnlineState) -> None:
    """Indices the kernels use without bounds checks must be in range."""
    n = int(state.counts[ACTIVE])
    if not 0 <= n <= config.alphabet_cap:
        raise _inconsistent(f"{n} active symbols for an alphabet of {config.alphabet_cap}")
    if not 0 <= int(state.counts[WINDOW_POS]) <= config.window:
        raise _inconsistent("window position out of range")
    codes = state.code_of
    seen = np.flatnonzero(codes)
    if codes.min() < 0 or len(seen) != n or not np.array_equal(np.sort(codes[seen]), np.arange(1, n + 1)) \
            or not np.array_equal(state.symbol_of[codes[seen]], seen):
        raise _inconsistent("symbol codes do not match")
    for name in ("x", "targets", "touched"):
        arr = getattr(state, name)
        if arr.min() < 0 or arr.max() > n:
            raise _inconsistent(f"{name!r} holds codes out of range")
    if state.inputs.min() < 0 or state.inputs.max() > config.units:
        raise _inconsistent("the graph names units out of range")
    if state.maps.size and _maps_out_of_range(state):
        raise _inconsistent("the probability maps' estimates, counts or rows are out of range")
    if state.ctx_kind.shape[0]:
        _check_context(config, state)
    elif state.ctx_int.any():  # nothing writes it without context units, and the probability maps read it
        raise _inconsistent("a model without context units holds a stream position or a match")


def _maps_out_of_range(state: OnlineState) -> bool:
    """Whether the probability maps hold what ``maps.py`` cannot have written (or would index out of bounds)."""
    at, rows = state.map_at, state.maps.shape[0]
    return bool(state.maps.min() < 0.0 or state.maps.max() > 1.0 or state.map_counts.min() < 0.0
                or state.map_counts.max() > MAP_COUNT_LIMIT or not 0.0 <= state.map_frac[0] <= 1.0
                or not 0 <= at[MAP_TOP] <= int(state.counts[ACTIVE]) or not 0 <= at[MAP_KNOT] <= MAP_POINTS - 2
                or not 0 <= at[MAP_ROW_A] < rows or not 0 <= at[MAP_ROW_B] < rows)


def _check_context(config: OnlineConfig, state: OnlineState) -> None:
    """The context units' tables, history and positions must be what ``sources.py`` can have written."""
    cap = config.alphabet_cap
    sources = np.array(config.sources, dtype=np.int64).reshape(-1, 2)
    if not np.array_equal(state.ctx_kind, sources):
        raise _inconsistent(f"its context sources {state.ctx_kind.tolist()} are not the configuration's "
                            f"{sources.tolist()}")
    ints = state.ctx_int
    t, H = int(ints[POS]), state.hist.shape[0]
    tag, sym, cnt, table = state.ctx_tag, state.ctx_sym, state.ctx_cnt, state.match_table
    if state.grown.size:  # the tables as far as they have grown: beyond, nothing was ever written
        _check_growth(config, state)
        used = 1 << int(state.grown[:-1, BITS].max(initial=0))
        tag, sym, cnt = tag[:, :used], sym[:, :used], cnt[:, :used]
        table = table[:1 << int(state.grown[-1, BITS])] if table.size else table
    counted = cnt > 0
    if sym.size and int(sym.max()) >= cap:
        raise _inconsistent(f"a context table holds symbol {int(sym.max())}, outside the alphabet [0, {cap})")
    if counted.any() and not state.code_of[sym[counted].astype(np.int64)].all():
        raise _inconsistent("a context table counts a symbol the learner has never seen")
    if int(cnt.max(initial=0)) >= config.count_limit:
        raise _inconsistent(f"a context table holds a count >= count_limit = {config.count_limit}")
    if np.any(counted & (tag == 0)[..., None]):
        raise _inconsistent("an empty context slot holds counts")
    if t < 0 or int(ints[ORDER0_TOTAL]) != t or state.order0.min(initial=0) < 0 or int(state.order0.sum()) != t:
        raise _inconsistent("the context units' symbol counts do not add up to their stream position")
    if H:  # the symbols the ring holds (the rest of it was never written)
        for piece in ring_views(state.hist, t - min(t, H), min(t, H)):
            counts = np.bincount(piece, minlength=cap)
            if counts[cap:].any():
                raise _inconsistent(f"the history holds a symbol outside the alphabet [0, {cap})")
            if not state.code_of[np.flatnonzero(counts)].all():
                raise _inconsistent("the history holds a symbol the learner has never seen")
    if not 0 <= int(ints[PREV_LINE_START]) <= int(ints[LINE_START]) <= t or int(ints[PREV_LINE_LEN]) < 0 \
            or int(ints[PREV_LINE_LEN]) > int(ints[LINE_START]) - int(ints[PREV_LINE_START]):
        raise _inconsistent("the context units' line positions are out of range")
    if int(ints[FIELD]) < 0:  # the field column indexes its field starts by it (capped above, not below)
        raise _inconsistent("the context units' field number is out of range")
    length, ptr = int(ints[MATCH_LEN]), int(ints[MATCH_PTR])
    if length < 0 or (length > 0 and not max(t - H, -1) < ptr < t):
        raise _inconsistent("the match model follows a position outside the history")
    if _counts_out_of_range(state.match_stats, config.count_limit):
        raise _inconsistent("the match model's statistics are out of range")
    if table.size and (table.min() < 0 or int(table.max()) > t + 1):
        raise _inconsistent("the match table holds positions beyond the stream")
    if int(ints[NNZ]) != 0 or state.feat.any():
        raise _inconsistent("context activities are left over between symbols")
    rows, S = state.sel_w.shape
    if rows and (state.sel_row.min() < 0 or state.sel_row[:S].max() >= rows or state.sel_row[S] > S
                 or state.sel_updates.min() < 0 or not (state.sel_h > 0.0).all()):
        raise _inconsistent("the selected weights' rows or counts are out of range")
    if state.fsel_w.size and (state.fsel_row.min() < 0 or state.fsel_row.max() >= state.fsel_w.shape[0]
                              or not (state.fsel_h > 0.0).all()):
        raise _inconsistent("the field-, unit- or order-2-selected weights' rows or metric are out of range")
    if state.fields.size:
        starts = np.concatenate([state.fields[0, :FIELD_SLOTS], state.fields[1, :FIELD_SLOTS + 1]])
        if starts.min() < 0 or starts.max() > t or not 0 <= state.fields[1, FIELD_SLOTS + 1] <= FIELD_SLOTS:
            raise _inconsistent("the field column's field positions are out of range")
        if not EMPTY <= state.fields[0, ABOVE] < cap or state.fields[0, SAME] not in (0, 1):
            raise _inconsistent("the field column's symbol above or its 'same so far' flag is out of range")
    _check_numbers(config, state)
    followed = state.followers[state.followers != 0].astype(np.int64) - 1
    if followed.size and (followed.min() < 0 or followed.max() >= cap or not state.code_of[followed].all()):
        raise _inconsistent("the indirect source's table holds a symbol the learner has never seen")


def _check_table_sizes(config: OnlineConfig, grown: np.ndarray) -> None:
    """Each growing table's size between its first and its largest (``grown``'s last row is the match table's).
    Checked as soon as ``grown`` is read, before its sizes say how much of each table to read, and before the
    checksum is: a damaged size must be refused, not allocated."""
    first, most = initial_bits(config.context_bits), config.context_bits
    bits = grown[:, BITS]
    if bits[:-1].size and (bits[:-1].min() < first or bits[:-1].max() > most):
        raise _inconsistent("a context table's size is out of range")
    if not initial_bits(config.match_bits) <= bits[-1] <= config.match_bits:
        raise _inconsistent("the match table's size is out of range")


def _check_growth(config: OnlineConfig, state: OnlineState) -> None:
    """Tables that grow (``growth.py``): each size between the first and the largest, each count of slots taken
    the slots that hold something, and nothing past a table's size."""
    grown, tag = state.grown, state.ctx_tag
    if grown.shape != (tag.shape[0] + 1, 2):
        raise _inconsistent("the tables' sizes are not one per table")
    _check_table_sizes(config, grown)
    bits = grown[:, BITS]
    used = 1 << int(bits[:-1].max(initial=0))
    for s in range(tag.shape[0]):
        size = 1 << int(bits[s])
        if tag[s, size:used].any() or np.count_nonzero(tag[s, :size]) != grown[s, TAKEN]:
            raise _inconsistent(f"context table {s} holds slots past its size, or not as many as it counts")
    if state.match_table.size:
        size = 1 << int(bits[-1])
        if np.count_nonzero(state.match_table[:size]) != grown[-1, TAKEN]:
            raise _inconsistent("the match table does not hold as many positions as it counts")
    elif grown[-1, TAKEN] != 0:
        raise _inconsistent("a model without a match model counts match table entries")


def _check_numbers(config: OnlineConfig, state: OnlineState) -> None:
    """The number source's tables and run: every symbol in the alphabet, every index within its array."""
    if not state.number_int.size:
        return
    cap, top = config.alphabet_cap, 10 ** NUMBER_DIGITS
    table, ints = state.number_table, state.number_int
    if (table[..., TAG].min() < 0 or table[..., LAST].min() < 0 or table[..., LAST].max() >= top
            or np.abs(table[..., CHANGE]).max() >= top or table[..., LENGTH].min() < 0
            or table[..., LENGTH].max() > NUMBER_DIGITS or table[..., AFTER].min() < 0
            or table[..., AFTER].max() >= cap or table[..., STREAK].min() < 0
            or table[..., STREAK].max() > NUMBER_STREAK):
        raise _inconsistent("the number source's table is out of range")
    if (state.number_digits.min() < 0 or state.number_digits.max() >= cap
            or not np.isin(ints[:, N_KEYED], (0, 1)).all() or not np.isin(ints[:, N_ON_TRACK], (0, 1)).all()
            or ints[:, N_RUN].min() < 0 or ints[:, N_VALUE].min() < 0 or ints[:, N_VALUE].max() >= top
            or ints[:, N_PREDICTED].min() < -1 or ints[:, N_PREDICTED].max() > NUMBER_DIGITS
            or ints[:, N_VOTED].min() < -1 or ints[:, N_VOTED].max() >= cap
            or ints[:, N_BUCKET].min() < 0 or ints[:, N_BUCKET].max() >= NUMBER_BUCKETS
            or ints[:, N_STREAK].min() < 0 or ints[:, N_STREAK].max() > NUMBER_STREAK):
        raise _inconsistent("the number source's current number is out of range")
    if _counts_out_of_range(state.number_stats, config.count_limit):
        raise _inconsistent("the number source's statistics are out of range")

