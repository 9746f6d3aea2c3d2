"""The models a stream is created with: the presets, what earlier seqd versions meant by them, and the bounds
on what one request may ask for.

A ``create`` names a preset (``core/learners.py``: ``bytes``, the default
byte model (the bitwise one since seqd 0.22), ``bitwise``, the same,
``glnn``, ``rehearsal`` (GLNNs trained by rehearsing the stream's past, for
small alphabets), a baseline, ``ctw``, ``esn``, ``lstm``, ``gru``, or a byte
model's frozen version, ``bytes-12``, ``bitwise-2``, ...) and overrides of
its configuration's settings; :func:`make_config` builds the configuration or
says why not.  A stream keeps the configuration it was created with, and its
model's name (``stream.json``), so the presets change with seqd's versions
while old streams keep their models: :data:`EARLIER` lets a create with
``exist_ok`` recognise a stream an older seqd made with the same words.
"""

from __future__ import annotations

import dataclasses

from ..core.learners import MODELS, PRESETS, model_of, settings_of, work_per_symbol
from ..core.faces import BITWISE, BYTES_PRESETS, GLNN
from ..core.online.versions import GLNN as GLNN_PRESET


# Earlier versions of a preset, for streams an older seqd created with it: such a stream keeps its model, and
# a create with exist_ok that names the preset still finds it.  Each comes from its model's table of versions
# (core/online/versions.py, core/bits/versions.py), as the settings it had instead of today's.
def _earlier(make, *befores):
    """One builder per earlier version: ``make`` (a preset's) with that version's settings, then the overrides."""
    def builder(before):
        return lambda **overrides: make(**{**before, **overrides})

    return tuple(builder(b) for b in befores)


def _earlier_bytes():
    """One builder per earlier meaning of "bytes", newest first (``core/faces.py``, ``BYTES_PRESETS``)."""
    def builder(face, preset):
        return lambda **overrides: face.preset(preset, **overrides)

    return tuple(builder(face, preset) for face, preset in reversed(BYTES_PRESETS[:-1]))


EARLIER = {"bytes": _earlier_bytes(),
           "bitwise": _earlier(BITWISE.config, *BITWISE.versions.earlier()),
           "glnn": _earlier(GLNN.config, *GLNN_PRESET.earlier())}  # the glnn preset's own table


def is_earlier_preset(config, preset: str | None, overrides: dict | None) -> bool:
    """Whether ``config`` is ``preset`` with ``overrides`` as an earlier seqd built it (:data:`EARLIER`)."""
    for build in EARLIER.get(preset or "bytes", ()):
        try:
            if build(**(overrides or {})) == config:
                return True
        except (TypeError, ValueError):
            continue
    return False


# What one request may ask of the daemon's memory and time, by model: a model within these bounds is built in
# well under a second and learns a symbol in milliseconds at most, and its arrays are counted against
# max_state_bytes before it is kept.
SERVED_BOUNDS = {
    "glnn": {"units": 512, "degree": 64, "window": 256, "context_bits": 22, "history_bits": 26, "match_bits": 24,
             "context_orders": 16},  # (a tuple's bound is on its length)
    "bitwise": {"table_bits": 20, "history_bits": 26, "match_bits": 24, "apm2_bits": 20, "number_bits": 20,
                "units": 16, "unit_degree": 16, "unit_window": 256},
    "ctw": {"depth": 64, "node_bits": 22},
    "esn": {"units": 2048, "connections": 64},
    "lstm": {"cells": 512, "layers": 4, "horizon": 256},
    "scornn": {"units": 512, "horizon": 256},
    "rehearsal": {"units": 32, "degree": 32, "draws": 4, "block": 1 << 17, "blocks": 16, "rehearsals": 64},
}
# and what one rehearsal may take besides the state (the batch steps' buffers over a block: core/rehearsal)
MAX_REHEARSAL_BYTES = 64 << 20
# and what one symbol may cost, for the models whose cost grows with their settings together (an LSTM's
# cells, layers and alphabet): 2^25 multiply-adds, some 10-20 ms (a worker's batch is sized by it: streams.chunk_for)
MAX_WORK_PER_SYMBOL = 1 << 25

CHUNK = 1 << 16  # a worker learns at most this many symbols of a stream before it yields to other streams
# ... and of a model that is costly per symbol, this many multiply-adds' worth: some 0.7 s of one LSTM stream
# on the machine of docs/benchmarks.md (3.2e9 multiply-adds per second, in either LSTM size measured there)
CHUNK_WORK = 1 << 31


def chunk_for(config) -> int:
    """The symbols a worker learns of a stream of ``config`` before it yields: :data:`CHUNK`, fewer for a model
    whose symbols cost much (an LSTM), so that one stream holds a worker about a second at most."""
    work = work_per_symbol(config)
    return CHUNK if work is None else max(16, min(CHUNK, CHUNK_WORK // max(work, 1)))


def make_config(preset: str | None, overrides: dict | None):
    """The model configuration of a new stream; ValueError with the reason when refused.

    Besides the configuration's own checks, the daemon bounds the model's size
    (:data:`SERVED_BOUNDS`): a request must not be able to stall the daemon or
    exhaust its memory.
    """
    preset = preset or "bytes"
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    model, make = PRESETS[preset]
    known = {f.name for f in dataclasses.fields(MODELS[model].config)}
    unknown = set(overrides or {}) - known
    if unknown:
        raise ValueError(f"unknown model setting(s) {', '.join(sorted(unknown))} for the {preset} preset")
    try:
        config = make(**(overrides or {}))
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    check_served(config)
    return config


def check_served(config) -> None:
    """ValueError unless this daemon serves a model of ``config``: within :data:`SERVED_BOUNDS`, the work per
    symbol and the context orders.  A new stream's configuration (:func:`make_config`) and a restored one
    (:mod:`.stream_meta`) meet the same bounds."""
    model = model_of(config).name
    for name, bound in SERVED_BOUNDS[model].items():
        value = getattr(config, name)
        if isinstance(value, tuple):
            if len(value) > bound:
                raise ValueError(f"at most {bound} {name.replace('_', ' ')}, got {len(value)}")
        elif value > bound:
            raise ValueError(f"{name} = {value} is above what this daemon serves ({bound})")
    work = work_per_symbol(config)
    if work is not None and work > MAX_WORK_PER_SYMBOL:
        raise ValueError(f"this model spends some {work:,} multiply-adds on a symbol, more than this daemon serves "
                         f"({MAX_WORK_PER_SYMBOL:,}): fewer cells, layers or units, or a smaller alphabet_cap")
    if model == "rehearsal" and config.rehearsal_bytes > MAX_REHEARSAL_BYTES:
        raise ValueError(f"a rehearsal over blocks of {config.block:,} symbols of {config.alphabet_cap} would take "
                         f"{config.rehearsal_bytes >> 20} MiB, more than this daemon gives one "
                         f"({MAX_REHEARSAL_BYTES >> 20} MiB): a smaller block or alphabet_cap")


def config_dict(config) -> dict:
    """Every setting of a stream's configuration, as a reply and ``stream.json`` hold them."""
    return settings_of(config)
