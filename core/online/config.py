"""The online learner's hyper-parameters, and the layout in which its kernels read them.

:class:`OnlineConfig` holds the settings under their constructor names.  The
kernels cannot read a dataclass, so the settings they need travel as two
arrays, ``hyper`` (floats) and ``flags`` (integers).  The order of each array
is written once, as a tuple of names (:data:`HYPER`, :data:`FLAGS`): the
packing (:meth:`OnlineConfig.hyper`, :meth:`OnlineConfig.flags`) reads the
config's attribute of each name in that order, and the kernels read position
``H.<name>`` / ``F.<name>``, a named tuple of the positions built from the
same tuple (Numba reads a global named tuple as a compile-time constant).
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, fields

import numpy as np

from ..kernels.backward import RBPM, RUOP
from ..kernels.elementary import NUMERICS
from ..model import ACTIVATIONS
from .sources import COLUMN, FIELD_COLUMN, FIELD_SLOTS, INDIRECT, MATCH, NUMBER, ORDER, WORD
from .selecting import UNIT_SELECTING_UNITS
from .versions import UNWRITTEN

# the mixer's steps (mixer.selected_writing_update): a diagonal outer-product metric per weight, one full
# outer-product block per number of sources found (Sherman-Morrison), or no metric (a plain gradient step)
SELECTED_STEPS = ("diagonal", "block", "gradient")
DIAGONAL, BLOCK, GRADIENT = range(len(SELECTED_STEPS))
# the float settings the kernels read, in their order in ``OnlineConfig.hyper()``
HYPER = (
    "leak",
    "input_scale",
    "writing_discount",
    "writing_prior",
    "metric_discount",
    "metric_prior",
    "max_transition_rate",
    "rate_growth",
    "rate_shrink",
    "context_weight",
    "context_prior",
    "selected_prior",
    "selected_rate",
    "selected_discount",
    "writing_evidence_floor",
    "credit_decay",
    "context_step_floor",
)
# the integer settings the kernels read, in their order in ``OnlineConfig.flags()``
FLAGS = (
    "window",
    "activation_code",
    "modulus",
    "quasi_diagonal",
    "alphabet_cap",
    "symbol_seed",
    "context_bits",
    "count_limit",
    "match_min",
    "selected_method",
    "field_set_fields",
    "field_selecting_positions",
    "order2_selected_weights",
    "unit_set_units",
    "probability_maps",
    "transition_prior",
    "credit_horizon",
    "close_escape",
    "table_growth",
    "match_bits",
)


def positions(name: str, names: tuple[str, ...]):
    """A named tuple whose field ``n`` is the position of ``n`` in ``names``."""
    return namedtuple(name, names)(*range(len(names)))


MAX_CREDIT_HORIZON = 60  # 1 - 2^-60 rounds to 1: sensitivities that never decay

H = positions("HyperPositions", HYPER)  # hyper[H.writing_discount] is gamma_w
F = positions("FlagPositions", FLAGS)  # flags[F.window] is K


@dataclass(frozen=True)
class OnlineConfig:
    """Hyper-parameters of an online learner, stored under their constructor names.

    One default serves every stream; ``docs/online.md`` records how each was
    chosen.
    """

    model: str = "glnn"  # "glnn" or "gnn" (gated models: per-symbol metric blocks)
    units: int = 32
    degree: int = 3
    activation: str = "tanh"
    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    method: str = "rbpm"  # rbpm, ruop (full blocks, Sherman-Morrison) or qdrbpm, qdruop
    window: int = 16  # truncated BPTT window K (symbols per transition update)
    input_scale: float = 16.0  # multiplies the reading rates mu_j/4 of eq. (32)
    writing_discount: float = 1.0 / 4096  # gamma_w of the writing Hessian sums
    writing_prior: float = 1.0  # prior mass kept in every writing Hessian diagonal
    # symbol y's writing sums are discounted at gamma_w * max(4 pi_y (1 - pi_y), floor) per symbol: by the evidence
    # a prediction gives about y's weights, never slower than floor x the clock; 1: by the clock (seqd 0.10)
    writing_evidence_floor: float = 0.25
    writing_rate: float = 1.0  # eta_w (the quasi-diagonal Newton step is self-scaled)
    metric_discount: float = 1.0 / 1024  # gamma_tau per contribution to a metric block
    # lambda_tau: a Gaussian prior (lambda_tau / 2)|tau - tau^0|^2 on each metric block's transition weights, centred
    # on their initial values (eqs. 31-33); its mass is kept in the block's metric, and its pull in the block's
    # gradient when transition_prior is on (docs/online.md, "Per window of K symbols")
    metric_prior: float = 4.0
    transition_prior: bool = True  # off: the prior's mass only (a damping), as seqd 0.10 and earlier had
    # initial eta_tau: 1, the full step, for seed 000's GLNN under its prior on tau; None: 1/N as in seed 000 (the byte
    # model's, and every learner's before seqd 0.11)
    transition_rate: float | None = 1.0
    # credit beyond the window (credit.py): each unit's forward sensitivities along its self-loop, kept over a
    # horizon of about 2^credit_horizon symbols (decay 1 - 2^-h; 0: none, the window's BPTT alone as in seqd 0.11)
    credit_horizon: int = 10
    # once every symbol of the alphabet has been seen, the escape gets no probability from the next symbol on; off: it
    # keeps its share until the window ends and it is retired (seqd 0.12 and earlier)
    close_escape: bool = True
    max_transition_rate: float = 1.0  # eta_tau <= 1: never beyond the Newton step of the discounted metric
    rate_growth: float = 1.1
    rate_shrink: float = 0.5
    seed: int = 0
    # context units (``sources.py``, ``mixer.py``); all off by default: the pure GLNN of seed 000
    context_orders: tuple[int, ...] = ()  # increasing orders of the hashed context chain
    column_context: bool = False  # (column, symbol above) source
    word_context: bool = False  # (field number, current word) source
    field_column_context: bool = False  # (field number, position in it, symbol there in the previous line, same so far)
    indirect_context: bool = False  # (last symbol, the symbol that followed the last two the previous time) source
    number_context: bool = False  # the number source (numbers.py): the last number after the same symbols + its change
    match_min: int = 0  # match model: shortest repeat it follows (0: no match model)
    context_bits: int = 16  # log2 of the slots per hashed source (with table_growth: the most a table grows to)
    context_entries: int = 16  # (symbol, count) pairs per slot
    count_limit: int = 127  # a count reaching it halves its slot's (and a match bucket's) counts
    history_bits: int = 20  # log2 of the symbols of history kept for the match and column sources
    match_bits: int = 18  # log2 of the match model's hash table (with table_growth: the most it grows to)
    # the context and match tables start small and double, each on its own, when half full (growth.py); off: they
    # have their full size from the start, with seqd 0.16's slots and tags
    table_growth: bool = False
    context_weight: float = 0.3  # initial context weight, and the centre of its prior
    context_prior: float = 10.0  # prior mass kept in the context weights' metric (lambda_w for them)
    # a voted symbol that did not come, with curvature pi_y (1 - pi_y) below this, keeps its context weights and
    # their metric block as they are (mixer.context_writing_update): its step and its contribution to the metric
    # are both of the order of pi_y; 0: every voted symbol steps (seqd 0.18 and earlier)
    context_step_floor: float = 0.0
    # the mixer (mixer.py): context weights shared across symbols, one per source and selecting context
    selected_weights: bool = False  # off: each (source, symbol) weight alone; always off without context units
    selected_prior: float = 100.0  # prior mass kept in their metric (lambda for them), centred on 0
    selected_step: str = "diagonal"  # their metric (SELECTED_STEPS, above): diagonal, block, or none: gradient
    selected_rate: float = 1.0  # the step's rate: 1 for a metric's Newton step; the gradient step's is tuned
    selected_discount: float = 1.0 / 4096  # gamma of their metric's discounted sums
    field_selected_weights: bool = False  # a second set, selected by the place in the field (needs the field column)
    order2_selected_weights: bool = False  # a third set, selected by the last two symbols (hashed)
    field_selecting_fields: int = 1  # the field set's rows tell apart the first n fields of a line (the rest share)
    field_selecting_positions: int = 4  # and the first n - 1 positions in a field (the rest share one)
    unit_selected_weights: bool = False  # a fourth set, selected by the signs of the recurrent units (up to 8)
    # the prediction refined by two adaptive probability maps (maps.py) before it is scored and coded
    probability_maps: bool = False
    # exp/log/tanh: "ieee", seqd's own (kernels/elementary.py), the same bits on every machine; "libm", the
    # C library's, which only format 1 .sqd files need (docs/format.md)
    numerics: str = "ieee"

    @classmethod
    def bytes_default(cls, **overrides) -> "OnlineConfig":
        """The default model for byte streams (logs, ``seqd compress``): a small GLNN plus context units, mixed."""
        settings = dict(units=4, context_orders=(1, 2, 3, 4, 6, 12, 16), column_context=True,
                        field_column_context=True, word_context=True, indirect_context=True, match_min=6,
                        selected_weights=True, field_selected_weights=True, number_context=True,
                        order2_selected_weights=True, field_selecting_fields=16, field_selecting_positions=8,
                        unit_selected_weights=True, probability_maps=True,
                        metric_prior=1.0, transition_prior=False,  # its 4 units as seqd 0.10 had them (bytes-9)
                        writing_evidence_floor=1.0, transition_rate=None, credit_horizon=0,
                        # lifelong memory (seqd 0.17): 64 MiB of history, tables that grow up to 2^18 slots
                        history_bits=26, match_bits=22, context_bits=18, table_growth=True,
                        context_step_floor=1e-5)  # seqd 0.19: the context weights of a symbol given ~0 stay
        # (the byte model's versions: versions.py; changing this adds a row there)
        settings.update(overrides)
        return cls(**settings)

    @classmethod
    def from_settings(cls, settings: dict) -> "OnlineConfig":
        """The configuration stored ``settings`` name; one an earlier seqd did not write takes the value that
        seqd used (``versions.UNWRITTEN``), so a stream or file it made keeps its model."""
        return cls(**{**UNWRITTEN, **settings})

    def __post_init__(self):
        object.__setattr__(self, "context_orders", tuple(int(k) for k in self.context_orders))
        for field in fields(self):  # an int given for a float setting must not make an int array
            if field.type in ("float", "float | None") and isinstance(getattr(self, field.name), int) \
                    and not isinstance(getattr(self, field.name), bool):
                object.__setattr__(self, field.name, float(getattr(self, field.name)))
        orders = self.context_orders
        if any(k < 1 for k in orders) or list(orders) != sorted(set(orders)):
            raise ValueError(f"context_orders must be distinct positive integers in increasing order, got {orders}")
        if not 10 <= self.context_bits <= 26 or not 10 <= self.history_bits <= 30 or not 10 <= self.match_bits <= 26:
            raise ValueError("context_bits and match_bits must be in [10, 26], history_bits in [10, 30]")
        if orders and orders[-1] > 1 << self.history_bits:  # an order-k context reads the history k symbols back
            raise ValueError(f"context_orders must not exceed the history of 2**history_bits = {1 << self.history_bits} "
                             f"symbols, got order {orders[-1]}")
        if not 1 <= self.context_entries <= 64:
            raise ValueError(f"context_entries must be in [1, 64], got {self.context_entries}")
        if not 2 <= self.count_limit <= 65535:
            raise ValueError(f"count_limit must be in [2, 65535], got {self.count_limit}")
        if self.match_min < 0 or self.match_min > 64:
            raise ValueError(f"match_min must be in [0, 64] (0: no match model), got {self.match_min}")
        if not (math.isfinite(self.context_prior) and self.context_prior > 0.0):
            raise ValueError(f"context_prior must be finite and > 0, got {self.context_prior}")
        if not 0.0 <= self.context_step_floor < 0.25:  # 1/4 is the largest curvature: every block would be skipped
            raise ValueError(f"context_step_floor must be in [0, 0.25), got {self.context_step_floor}")
        if not math.isfinite(self.context_weight):
            raise ValueError(f"context_weight must be finite, got {self.context_weight}")
        if self.selected_weights and not self.sources:  # nothing to mix: the model is the one without a mixer
            object.__setattr__(self, "selected_weights", False)
        if self.field_selected_weights and not (self.selected_weights and self.field_column_context):
            object.__setattr__(self, "field_selected_weights", False)  # no mixer, or no field column to select by
        if not (1 <= self.field_selecting_fields <= FIELD_SLOTS and 1 <= self.field_selecting_positions <= 64):
            raise ValueError(f"field_selecting_fields must be in [1, {FIELD_SLOTS}] and field_selecting_positions in "
                             f"[1, 64], got {self.field_selecting_fields} and {self.field_selecting_positions}")
        if self.order2_selected_weights and not self.selected_weights:
            object.__setattr__(self, "order2_selected_weights", False)  # no mixer
        if self.unit_selected_weights and not (self.selected_weights and self.units > 0):
            object.__setattr__(self, "unit_selected_weights", False)  # no mixer, or no units to select by
        if not (math.isfinite(self.selected_prior) and self.selected_prior > 0.0):
            raise ValueError(f"selected_prior must be finite and > 0, got {self.selected_prior}")
        if not (math.isfinite(self.selected_rate) and self.selected_rate > 0.0):
            raise ValueError(f"selected_rate must be finite and > 0, got {self.selected_rate}")
        if self.selected_step not in SELECTED_STEPS:
            raise ValueError(f"selected_step must be one of {SELECTED_STEPS}, got {self.selected_step!r}")
        if self.model not in ("glnn", "gnn"):
            raise ValueError(f"online model must be 'glnn' or 'gnn' (gated, per-symbol metric blocks), got {self.model!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.numerics not in NUMERICS:
            raise ValueError(f"numerics must be one of {tuple(NUMERICS)}, got {self.numerics!r}")
        if self.method not in ("rbpm", "ruop", "qdrbpm", "qdruop"):
            raise ValueError(f"online method must be rbpm, ruop, qdrbpm or qdruop, got {self.method!r}")
        if self.units == 0 and not self.sources:
            raise ValueError("units=0 (no recurrent units) needs context units to predict with")
        if self.units < 0 or self.degree < 1 or (self.units > 0 and self.degree > self.units):
            raise ValueError(f"need units >= 0 and 1 <= degree <= units, got units={self.units}, degree={self.degree}")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        for name in ("writing_discount", "metric_discount", "selected_discount"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {v}")
        for name in ("writing_prior", "metric_prior", "writing_rate", "input_scale", "max_transition_rate"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"{name} must be finite and > 0, got {v}")
        if not 0.0 <= self.writing_evidence_floor <= 1.0:
            raise ValueError(f"writing_evidence_floor must be in [0, 1] (1: discount by the clock), "
                             f"got {self.writing_evidence_floor}")
        if not 0 <= self.credit_horizon <= MAX_CREDIT_HORIZON:
            raise ValueError(f"credit_horizon must be in [0, {MAX_CREDIT_HORIZON}] (0: no credit beyond the window), "
                             f"got {self.credit_horizon}")
        if not 0.0 < self.rate_shrink < 1.0:
            raise ValueError(f"rate_shrink must be in (0, 1), got {self.rate_shrink}")
        if not (math.isfinite(self.rate_growth) and self.rate_growth >= 1.0):
            raise ValueError(f"rate_growth must be finite and >= 1, got {self.rate_growth}")
        if self.transition_rate is not None and not 0.0 < self.transition_rate <= self.max_transition_rate:
            raise ValueError(f"transition_rate must be in (0, max_transition_rate={self.max_transition_rate}], "
                             f"got {self.transition_rate} (a lower max_transition_rate needs a transition_rate too)")

    @property
    def sources(self) -> list[tuple[int, int]]:
        """The context units as (kind, order) pairs, in the order of their weights (``sources.py``)."""
        out = [(ORDER, k) for k in self.context_orders]
        if self.column_context:
            out.append((COLUMN, 0))
        if self.field_column_context:
            out.append((FIELD_COLUMN, 0))
        if self.word_context:
            out.append((WORD, 0))
        if self.indirect_context:
            out.append((INDIRECT, 0))
        if self.number_context:
            out.append((NUMBER, 0))
        if self.match_min:
            out.append((MATCH, self.match_min))
        return out

    @property
    def selected_method(self) -> int:
        """The selected weights' step as the kernels name it: its position in ``SELECTED_STEPS``."""
        return SELECTED_STEPS.index(self.selected_step)

    @property
    def field_set_fields(self) -> int:
        """The field numbers the field-selected weights tell apart, 0 without them (the kernels' test for the set)."""
        return self.field_selecting_fields if self.field_selected_weights else 0

    @property
    def unit_set_units(self) -> int:
        """The units whose signs select the unit set's row, 0 without it (the kernels' test for the set)."""
        return min(self.units, UNIT_SELECTING_UNITS) if self.unit_selected_weights else 0

    @property
    def leak(self) -> float:
        """1 for the GLNN (eq. 13), 0 for the GNN (eq. 10): the evolution's factor on V^t."""
        return 1.0 if self.model == "glnn" else 0.0

    @property
    def activation_code(self) -> int:
        """The activation as the kernels name it (``kernels.activation``: 0 tanh, 1 logistic)."""
        return ACTIVATIONS.index(self.activation)

    @property
    def symbol_seed(self) -> int:
        """The seed of the per-(unit, symbol) uniforms of ``initialization.unit_uniform``, as a non-negative int64."""
        return self.seed & 0x7FFFFFFFFFFFFFFF

    @property
    def credit_decay(self) -> float:
        """gamma of the forward sensitivities (``credit.py``): 1 - 2^-credit_horizon, 0 without them."""
        return 1.0 - 2.0 ** -self.credit_horizon if self.credit_horizon else 0.0

    @property
    def slots(self) -> int:
        return self.degree + 1

    @property
    def modulus(self) -> int:
        return RUOP if self.method.endswith("ruop") else RBPM

    @property
    def quasi_diagonal(self) -> bool:
        return self.method.startswith("qd")

    def hyper(self) -> np.ndarray:
        """The float settings the kernels read, in the order of :data:`HYPER` (read as ``hyper[H.<name>]``)."""
        return np.array([float(getattr(self, name)) for name in HYPER])

    def flags(self) -> np.ndarray:
        """The integer settings the kernels read, in the order of :data:`FLAGS` (read as ``flags[F.<name>]``)."""
        return np.array([int(getattr(self, name)) for name in FLAGS], dtype=np.int64)

