"""The bitwise byte model's face (``kit/face.py``): seqd's default byte model since seqd 0.22, as the container,
the limits, the command line and the daemon see it.  Its files are format 4; its presets are ``versions.py``'s,
and the compression levels of ``seqd compress`` are its newest preset with the changes :data:`LEVELS` gives."""

from __future__ import annotations

from ..kit.face import Bounds, Coder, Face
from . import codec
from .config import BitsConfig, state_nbytes
from .learner import BitsLearner
from .state import first_resident_nbytes
from .versions import BITWISE_MODEL

# what a reader accepts of a file's settings; BitsConfig adds its own (rate_floor <= rate, unit_degree <= units, ...)
BOUNDS = Bounds(
    ints={"alphabet_cap": (256, 256), "table_bits": (10, 24), "history_bits": (10, 30), "match_bits": (10, 26),
          "slot_limit": (2, 65535), "history_limit": (2, 65535), "seed": (0, (1 << 63) - 1), "revision": (1, 3),
          "apm2_bits": (10, 24), "units": (0, 64), "unit_degree": (1, 64), "unit_window": (1, 4096),
          "number_bits": (10, 24), "table_ways": (1, 4), "table_fill": (2, 64)},
    floats={"rate": (2.0 ** -20, 1.0), "rate_floor": (2.0 ** -20, 1.0), "rate_bits": (1.0, 2.0 ** 50),
            "apm_rate": (2.0 ** -20, 1.0), "apm_weight": (0.0, 1.0), "unit_input_scale": (0.0, 1024.0),
            "unit_writing_discount": (2.0 ** -30, 0.5), "unit_writing_prior": (2.0 ** -20, 2.0 ** 20),
            "unit_metric_discount": (2.0 ** -30, 0.5), "unit_metric_prior": (2.0 ** -20, 2.0 ** 20)},
    bools=("runs", "table_growth"),
)

# seqd compress -1 ... -9: the newest preset with these changes (a file stores its model's settings, so the
# levels may be chosen anew in any release without touching the format).  Measured in docs/benchmarks.md
# ("Compression levels", bench/levels.py).
LEVEL_MODELS = {
    "fast": dict(units=0, runs=False, table_bits=16, history_bits=20, match_bits=18),
    "small": dict(units=0, table_bits=16, history_bits=22, match_bits=20),
    "counts": dict(units=0),
    "default": {},
    "max": dict(table_bits=19, number_bits=17),
}
LEVELS = {1: "fast", 2: "small", 3: "small", 4: "counts", 5: "counts", 6: "default", 7: "max", 8: "max", 9: "max"}


class BitwiseCoder(Coder):
    """The binary arithmetic coder driven by the model's bit probabilities (``codec.py``)."""

    def __init__(self, config: BitsConfig):
        super().__init__(codec)

    def encode(self, learner, x, out):
        codec.encode_bytes(learner.state, learner._hyper, x, self._state, out)
        learner.settle()

    def decode(self, learner, data, out) -> int:
        done = codec.decode_bytes(learner.state, learner._hyper, data, self._state, out)
        learner.settle()
        return done

    max_encoded_bytes = staticmethod(codec.max_encoded_bytes)


def _check_header(version: int, preset: str, config: BitsConfig) -> None:
    """Every bitwise model a header may name is built by this seqd."""


def _keeps_ring(config: BitsConfig) -> bool:
    return config.table_growth


def _solo(config: BitsConfig) -> BitsLearner:
    """A learner with huge pages from the start (``state.new_state``): some 5 % faster while its tables are
    small, for 2 MiB of memory a table as soon as it is touched."""
    return BitsLearner(config, eager_pages=True)


FACE = Face(model="bitwise", header_name="bitwise", config=BitsConfig, learner=BitsLearner,
            versions=BITWISE_MODEL, writes=4, reads=(4,), bounds=BOUNDS, coder=BitwiseCoder,
            state_nbytes=state_nbytes, first_resident=first_resident_nbytes, keeps_ring=_keeps_ring,
            check_header=_check_header, solo=_solo, levels=LEVEL_MODELS, level_names=LEVELS)
