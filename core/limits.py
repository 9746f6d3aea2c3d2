"""What a ``.sqd`` reader accepts from a file it did not write, and the memory a file's model needs.

A header's CRC-32 catches damage, not intent: whoever writes a file can write
any JSON and a matching checksum.  So the reader trusts nothing in it.  The
header is parsed strictly (:func:`parse_meta`: known keys only, each of its
type; no NaN, no infinities), and the model it names is built only if every
setting is of its type and within :data:`INT_BOUNDS`, :data:`FLOAT_BOUNDS`,
:data:`CHOICES` and the bounds on ``context_orders`` (:func:`check_settings`).
The writer checks the same bounds (:func:`check_config`), so a reader never
refuses a file that this version of seqd wrote, and never runs a model that
it could not have written: the alphabet is bytes, the recurrent network and
its window are of a size that codes at a usable speed, and every context
order is one the hashing reaches in a few steps.

The tables' sizes (``context_bits``, ``history_bits``, ``match_bits``) are
left to OnlineConfig's own bounds: they cost memory, not time, and the memory
is checked before anything is allocated (:func:`check_memory`), from the
array shapes of the learner's state (``online.state.state_shapes``) and the
block buffers the header's block size implies.  ``docs/format.md`` lists all
of it.
"""

from __future__ import annotations

import dataclasses
import json
import math

from .bits import BitsConfig
from .bits.codec import max_encoded_bytes as bitwise_encoded_bytes
from .bits.config import state_nbytes as bitwise_state_nbytes
from .kernels.elementary import NUMERICS
from .online import OnlineConfig
from .online.config import MAX_CREDIT_HORIZON, SELECTED_STEPS
from .online.codec import max_encoded_bytes
from .online.state import state_nbytes

DEFAULT_MEMORY_LIMIT = 1 << 30  # the default model decodes in about 79 MiB (55 MiB of state, 24 MiB of buffers)
MAX_BUILD_CHARS = 256  # the header's "build" text is quoted in error messages: a short line
MAX_ORDERS = 16  # context orders per model (the default has 7)
MAX_ORDER = 64  # the longest context order: its hash reads that many symbols back at every step

# inclusive bounds of each integer setting (OnlineConfig adds its own: degree <= units, ...)
INT_BOUNDS = {
    "units": (0, 64),
    "degree": (1, 16),
    "alphabet_cap": (256, 256),  # the container codes bytes; its buffers have 256 + 1 entries
    "window": (1, 256),
    "seed": (0, (1 << 63) - 1),
    "match_min": (0, 64),
    "context_bits": (10, 26),
    "context_entries": (1, 64),
    "count_limit": (2, 65535),
    "history_bits": (10, 30),
    "match_bits": (10, 26),
    "field_selecting_fields": (1, 64),
    "field_selecting_positions": (1, 64),
    "credit_horizon": (0, MAX_CREDIT_HORIZON),
}
# inclusive bounds of each float setting (OnlineConfig adds its open ends: discounts in (0, 1), ...)
FLOAT_BOUNDS = {
    "input_scale": (2.0 ** -10, 2.0 ** 10),
    "writing_discount": (2.0 ** -30, 0.5),
    "writing_prior": (2.0 ** -20, 2.0 ** 20),
    "writing_rate": (2.0 ** -20, 2.0 ** 4),
    "metric_discount": (2.0 ** -30, 0.5),
    "metric_prior": (2.0 ** -20, 2.0 ** 20),
    "writing_evidence_floor": (0.0, 1.0),
    "transition_rate": (2.0 ** -30, 2.0 ** 4),  # or null: 1/N
    "max_transition_rate": (2.0 ** -30, 2.0 ** 4),
    "rate_growth": (1.0, 16.0),
    "rate_shrink": (2.0 ** -30, 1.0 - 2.0 ** -30),
    "context_weight": (-16.0, 16.0),
    "context_prior": (2.0 ** -20, 2.0 ** 20),
    "selected_prior": (2.0 ** -20, 2.0 ** 20),
    "selected_rate": (2.0 ** -20, 2.0 ** 4),
    "selected_discount": (2.0 ** -30, 0.5),
    "context_step_floor": (0.0, 0.125),
}
CHOICES = {
    "model": ("glnn", "gnn"),
    "activation": ("tanh", "logistic"),
    "method": ("rbpm", "ruop", "qdrbpm", "qdruop"),
    "selected_step": SELECTED_STEPS,
    "numerics": tuple(NUMERICS),  # the container takes "libm" from format 1 files only (container.read_header)
}
BOOLS = ("column_context", "word_context", "field_column_context", "indirect_context", "selected_weights",
         "field_selected_weights", "number_context", "order2_selected_weights", "unit_selected_weights",
         "probability_maps", "transition_prior", "close_escape", "table_growth")
NULLABLE = ("transition_rate",)
# the bitwise model's settings (format 4), bounded the same way (BitsConfig adds rate_floor <= rate)
BITWISE_INT_BOUNDS = {
    "alphabet_cap": (256, 256),
    "table_bits": (10, 24),
    "history_bits": (10, 30),
    "match_bits": (10, 26),
    "slot_limit": (2, 65535),
    "history_limit": (2, 65535),
    "seed": (0, (1 << 63) - 1),
    "revision": (1, 2),
    "apm2_bits": (10, 24),
    "units": (0, 64),
    "unit_degree": (1, 64),
    "unit_window": (1, 4096),
}
BITWISE_FLOAT_BOUNDS = {
    "rate": (2.0 ** -20, 1.0),
    "rate_floor": (2.0 ** -20, 1.0),
    "rate_bits": (1.0, 2.0 ** 50),
    "apm_rate": (2.0 ** -20, 1.0),
    "apm_weight": (0.0, 1.0),
    "unit_input_scale": (0.0, 1024.0),
    "unit_writing_discount": (2.0 ** -30, 0.5),
    "unit_writing_prior": (2.0 ** -20, 2.0 ** 20),
    "unit_metric_discount": (2.0 ** -30, 0.5),
    "unit_metric_prior": (2.0 ** -20, 2.0 ** 20),
}
BITWISE_BOOLS = ("runs",)
LEARNERS = ("online", "bitwise")  # a header's "learner": the GLNN byte model (formats 1-3, the default) or not
META_KEYS = {"preset": str, "config": dict, "block_size": int, "chain_size": int, "build": str, "learner": str}
REQUIRED_META = ("preset", "config", "block_size")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number seqd writes")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of a float's range")
    return value


def strict_json(body: bytes):
    """JSON that seqd wrote, or a ValueError: no NaN, no infinities (nor numbers that overflow to one), not
    nested past the parser's depth.  A ``.sqd`` header's and a daemon's ``stream.json`` are read so."""
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def parse_meta(body: bytes) -> dict:
    """The header's JSON object, strictly: its known keys only, each of its type (a ValueError otherwise)."""
    meta = strict_json(body)
    if not isinstance(meta, dict):
        raise ValueError("the JSON is not an object")
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0][:40]!r} (a newer seqd's? upgrade seqd)")
    for key in REQUIRED_META:
        if key not in meta:
            raise ValueError(f"missing key {key!r}")
    for key, kind in META_KEYS.items():
        if key in meta and (not isinstance(meta[key], kind) or isinstance(meta[key], bool)):
            raise ValueError(f"{key} must be {'an integer' if kind is int else 'a ' + kind.__name__}")
    build = meta.get("build", "")
    if len(build) > MAX_BUILD_CHARS or not build.isprintable():
        raise ValueError(f"build must be a printable text of at most {MAX_BUILD_CHARS} characters")
    return meta


def check_settings(settings: dict, learner: str = "online") -> OnlineConfig | BitsConfig:
    """The model of a header's settings (its preset's, then its overrides), each checked by type and bound;
    ``learner`` is the header's (:data:`LEARNERS`).

    Raises a ValueError naming the first setting refused.
    """
    if learner not in LEARNERS:
        raise ValueError(f"learner {str(learner)[:40]!r} is not one this seqd knows: upgrade seqd")
    kind = BitsConfig if learner == "bitwise" else OnlineConfig
    names = {field.name for field in dataclasses.fields(kind)}
    for key, value in settings.items():
        if key not in names:
            raise ValueError(f"unknown setting {str(key)[:40]!r}")
        if kind is BitsConfig:
            _check_setting(key, value, BITWISE_INT_BOUNDS, BITWISE_FLOAT_BOUNDS, BITWISE_BOOLS)
        else:
            _check_setting(key, value)
    return kind.from_settings(settings)


def _check_setting(key: str, value, int_bounds=INT_BOUNDS, float_bounds=FLOAT_BOUNDS, bools=BOOLS) -> None:
    if key in NULLABLE and value is None:
        return
    if key in int_bounds:
        lo, hi = int_bounds[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{key} must be an integer, got {_show(value)}")
        if not lo <= value <= hi:
            if key == "alphabet_cap":
                raise ValueError(f"the container codes bytes: alphabet_cap must be 256, got {_show(value)}")
            raise ValueError(f"{key} must be in [{lo}, {hi}], got {_show(value)}")
    elif key in float_bounds:
        lo, hi = float_bounds[key]
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError(f"{key} must be a number, got {_show(value)}")
        if not lo <= value <= hi:  # NaN fails this too
            raise ValueError(f"{key} must be in [{lo:g}, {hi:g}], got {_show(value)}")
    elif key in CHOICES:
        if value not in CHOICES[key] or not isinstance(value, str):
            raise ValueError(f"{key} must be one of {', '.join(CHOICES[key])}, got {_show(value)}")
    elif key in bools:
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {_show(value)}")
    elif key == "context_orders":
        if not isinstance(value, (list, tuple)) or len(value) > MAX_ORDERS:
            raise ValueError(f"context_orders must be a list of at most {MAX_ORDERS} orders, got {_show(value)}")
        for order in value:
            if not isinstance(order, int) or isinstance(order, bool) or not 1 <= order <= MAX_ORDER:
                raise ValueError(f"context_orders must be integers in [1, {MAX_ORDER}], got {_show(order)}")
    else:  # a field of OnlineConfig that this table does not know: tests/test_hostile.py keeps them in step
        raise ValueError(f"setting {key!r} has no bound")


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def learner_of(config) -> str:
    """The header's name of the learner of ``config`` (:data:`LEARNERS`)."""
    return "bitwise" if isinstance(config, BitsConfig) else "online"


def check_config(config: OnlineConfig | BitsConfig) -> None:
    """Refuse to write a model a reader would refuse (the writer's half of :func:`check_settings`)."""
    if not isinstance(config, (OnlineConfig, BitsConfig)):
        raise ValueError(f"the .sqd container codes with seqd's byte models (an OnlineConfig or a BitsConfig); "
                         f"a {type(config).__name__} model has no .sqd format")
    check_settings(json.loads(json.dumps(dataclasses.asdict(config))), learner_of(config))


def encoded_bound(config, n: int) -> int:
    """The most payload bytes a block of ``n`` bytes codes to with ``config``'s model."""
    return bitwise_encoded_bytes(n) if isinstance(config, BitsConfig) else max_encoded_bytes(n)


def decoding_memory(config: OnlineConfig | BitsConfig, block_size: int, learners: int = 1) -> tuple[int, int]:
    """(model bytes, block buffer bytes) that decoding a file needs with ``learners`` blocks at once.

    A learner's state is fixed by its configuration (``state_nbytes``); a
    block needs its payload (at most :func:`encoded_bound`), its decoded bytes
    and their copy as ``bytes``.
    """
    model = bitwise_state_nbytes(config) if isinstance(config, BitsConfig) else state_nbytes(config)
    return learners * model, learners * (encoded_bound(config, block_size) + 2 * block_size)


def check_memory(config: OnlineConfig, block_size: int, limit: int, name: str = "the file", learners: int = 1,
                 option: str = "memory_limit") -> None:
    """A ValueError, one line, when decoding needs more than ``limit`` bytes: the file, the need, the limit, the fix."""
    model, buffers = decoding_memory(config, block_size, learners)
    if model + buffers > limit:
        raise MemoryLimitError(
            f"{name}: decoding needs {_size(model + buffers)} of memory ({_size(model)} for the model"
            f"{f' × {learners}' if learners > 1 else ''}, {_size(buffers)} for blocks of {_size(block_size)}), "
            f"more than the limit of {_size(limit)}; if the file is trusted, raise the limit with {option}")


class MemoryLimitError(ValueError):
    """Decoding a file would need more memory than allowed."""


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
