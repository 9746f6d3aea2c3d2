"""The GLNN byte model's face (``kit/face.py``): what the container, the limits, the command line and the daemon
need of it.  Its files are formats 1 to 3 (written as 3); since seqd 0.22 it is no longer the default byte model,
and its presets (``versions.py``) stay frozen: its files decode and its streams learn, bit for bit, forever."""

from __future__ import annotations

from .. import coder as range_coder
from ..kernels.elementary import NUMERICS
from ..kit.face import Bounds, Coder, Face, Unbuildable
from .codec import decode_symbols, encode_symbols, freq_buffer, max_encoded_bytes
from .config import MAX_CREDIT_HORIZON, SELECTED_STEPS, OnlineConfig
from .learner import OnlineLearner
from .state import first_resident_nbytes, state_nbytes
from .versions import BYTE_MODEL

MAX_ORDERS = 16  # context orders per model (bytes-12 has 7)
MAX_ORDER = 64  # the longest context order: its hash reads that many symbols back at every step

# what a reader accepts of a file's settings; OnlineConfig adds its own (degree <= units, discounts in (0, 1), ...).
# The tables' sizes (context_bits, history_bits, match_bits) cost memory, not time, and the memory is checked
# before anything is allocated (core/limits.py, check_memory).
BOUNDS = Bounds(
    ints={"units": (0, 64), "degree": (1, 16), "alphabet_cap": (256, 256), "window": (1, 256),
          "seed": (0, (1 << 63) - 1), "match_min": (0, 64), "context_bits": (10, 26), "context_entries": (1, 64),
          "count_limit": (2, 65535), "history_bits": (10, 30), "match_bits": (10, 26),
          "field_selecting_fields": (1, 64), "field_selecting_positions": (1, 64),
          "credit_horizon": (0, MAX_CREDIT_HORIZON)},
    floats={"input_scale": (2.0 ** -10, 2.0 ** 10), "writing_discount": (2.0 ** -30, 0.5),
            "writing_prior": (2.0 ** -20, 2.0 ** 20), "writing_rate": (2.0 ** -20, 2.0 ** 4),
            "metric_discount": (2.0 ** -30, 0.5), "metric_prior": (2.0 ** -20, 2.0 ** 20),
            "writing_evidence_floor": (0.0, 1.0), "transition_rate": (2.0 ** -30, 2.0 ** 4),
            "max_transition_rate": (2.0 ** -30, 2.0 ** 4), "rate_growth": (1.0, 16.0),
            "rate_shrink": (2.0 ** -30, 1.0 - 2.0 ** -30), "context_weight": (-16.0, 16.0),
            "context_prior": (2.0 ** -20, 2.0 ** 20), "selected_prior": (2.0 ** -20, 2.0 ** 20),
            "selected_rate": (2.0 ** -20, 2.0 ** 4), "selected_discount": (2.0 ** -30, 0.5),
            "context_step_floor": (0.0, 0.125)},
    choices={"model": ("glnn", "gnn"), "activation": ("tanh", "logistic"),
             "method": ("rbpm", "ruop", "qdrbpm", "qdruop"), "selected_step": SELECTED_STEPS,
             "numerics": tuple(NUMERICS)},  # "libm" from format 1 files only (check_header)
    bools=("column_context", "word_context", "field_column_context", "indirect_context", "selected_weights",
           "field_selected_weights", "number_context", "order2_selected_weights", "unit_selected_weights",
           "probability_maps", "transition_prior", "close_escape", "table_growth"),
    nullable=("transition_rate",),
    lists={"context_orders": (MAX_ORDERS, 1, MAX_ORDER)},
)


class GlnnCoder(Coder):
    """The range coder (``core/coder.py``) driven by the learner's 256-way predictions (``codec.py``)."""

    def __init__(self, config: OnlineConfig):
        super().__init__(range_coder)
        self._freq = freq_buffer(config.alphabet_cap)

    def encode(self, learner, x, out):
        encode_symbols(learner.state, learner._hyper, learner._flags, x, self._state, out, self._freq)

    def decode(self, learner, data, out) -> int:
        return decode_symbols(learner.state, learner._hyper, learner._flags, data, self._state, out, self._freq)

    max_encoded_bytes = staticmethod(max_encoded_bytes)


def check_header(version: int, preset: str, config: OnlineConfig) -> None:
    """What this model's history forbids a header: format 1 was coded with the C library's exp/log/tanh and
    every later format with seqd's own; and seqd 0.3's field column, which this seqd no longer builds."""
    if config.numerics != ("libm" if version == 1 else "ieee"):
        raise ValueError(f"format {version} files are not coded with numerics {config.numerics!r}")
    if config.field_column_context and preset in ("bytes-1", "bytes-2", "bytes-3"):
        raise Unbuildable("the file's model has the field column of seqd 0.3, which this seqd no longer builds: "
                        "decompress it with seqd 0.3")


def _keeps_ring(config: OnlineConfig) -> bool:
    return bool(config.sources)


FACE = Face(model="glnn", header_name="online", config=OnlineConfig, learner=OnlineLearner, versions=BYTE_MODEL,
            writes=3, reads=(1, 2, 3), bounds=BOUNDS, coder=GlnnCoder, state_nbytes=state_nbytes,
            first_resident=first_resident_nbytes, keeps_ring=_keeps_ring, check_header=check_header,
            solo=OnlineLearner)
