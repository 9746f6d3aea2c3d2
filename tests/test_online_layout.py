"""The online kernels read their settings by position: each position must hold the setting of its name; and they
read the state through each part's named tuple: each field must hold the array of its name."""

import numpy as np
import pytest

from seqd.core.kernels.activation import LOGISTIC
from seqd.core.kernels.backward import RUOP
from seqd.core.online.config import FLAGS, HYPER, F, H, OnlineConfig
from seqd.core.online.maps import maps_of
from seqd.core.online.mixer import mixer_of
from seqd.core.online.sources import sources_of
from seqd.core.online.state import new_state

# every setting different from the others, so that a position read in the wrong place shows
CONFIG = OnlineConfig(model="gnn", activation="logistic", method="qdruop", window=7, input_scale=3.0,
                      writing_discount=0.011, writing_prior=0.7, metric_discount=0.013, metric_prior=0.9,
                      max_transition_rate=0.8, transition_rate=0.6, rate_growth=1.3, rate_shrink=0.4, context_weight=0.25,
                      context_prior=6.0, alphabet_cap=200, seed=-5, context_bits=12, count_limit=99, match_min=5)


def test_layouts_name_each_setting_once():
    assert len(set(HYPER)) == len(HYPER) and len(set(FLAGS)) == len(FLAGS)
    assert H._fields == HYPER and tuple(H) == tuple(range(len(HYPER)))
    assert F._fields == FLAGS and tuple(F) == tuple(range(len(FLAGS)))


@pytest.mark.parametrize("view", [sources_of, mixer_of, maps_of], ids=lambda f: f.__name__)
def test_each_parts_view_holds_the_state_arrays_of_its_names(view):
    """``sources_of``, ``mixer_of`` and ``maps_of`` list the state's arrays by hand, in their tuple's order: a
    swap of two arrays of one type and shape (``ctx_slot`` and ``ctx_found``) would compile and run wrong."""
    st = new_state(OnlineConfig.bytes_default(context_bits=10, history_bits=10, match_bits=10))
    part = getattr(view, "py_func", view)(st)  # the Python function: a compiled one cannot return arrays here
    for name in part._fields:
        assert getattr(part, name) is getattr(st, name), name


@pytest.mark.parametrize("name", HYPER)
def test_each_hyper_position_reads_back_its_setting(name):
    hyper = CONFIG.hyper()
    assert hyper.dtype == np.float64 and hyper.shape == (len(HYPER),)
    assert hyper[getattr(H, name)] == getattr(CONFIG, name)


@pytest.mark.parametrize("name", FLAGS)
def test_each_flag_position_reads_back_its_setting(name):
    flags = CONFIG.flags()
    assert flags.dtype == np.int64 and flags.shape == (len(FLAGS),)
    assert flags[getattr(F, name)] == getattr(CONFIG, name)


def test_derived_settings_are_what_the_kernels_expect():
    hyper, flags = CONFIG.hyper(), CONFIG.flags()
    assert hyper[H.leak] == 0.0 and OnlineConfig().hyper()[H.leak] == 1.0  # gnn: eq. (10); glnn: eq. (13)
    assert flags[F.activation_code] == LOGISTIC
    assert flags[F.modulus] == RUOP and flags[F.quasi_diagonal] == 1
    assert flags[F.symbol_seed] == -5 & 0x7FFFFFFFFFFFFFFF > 0
    assert hyper[H.writing_discount] == 0.011 and flags[F.window] == 7 and flags[F.alphabet_cap] == 200


def test_a_version_1_snapshot_restores_with_seqd_numerics():
    """Learner snapshots before numerics existed (version 1) restore and continue with 'ieee' numerics."""
    import json
    import struct
    import zlib

    from seqd.core.online import OnlineConfig, OnlineLearner
    from seqd.core.online import snapshot as snap

    learner = OnlineLearner(OnlineConfig(units=3, degree=2, alphabet_cap=8, window=4))
    learner.learn([1, 2, 3, 1, 2, 3, 4])
    data = learner.to_bytes()
    magic, _, hlen = snap._HEADER.unpack_from(data)
    meta = json.loads(data[snap._HEADER.size:snap._HEADER.size + hlen])
    assert meta["arrays"][-1][0] == "numerics" and meta["arrays"][-1][2] == [0]  # an empty array: no bytes
    del meta["config"]["numerics"]
    meta["arrays"] = meta["arrays"][:-1]
    header = json.dumps(meta, sort_keys=True).encode()
    body = snap._HEADER.pack(magic, 1, len(header)) + header + data[snap._HEADER.size + hlen:-4]
    config, state = snap.from_bytes(body + struct.pack("<I", zlib.crc32(body)))
    assert config.numerics == "ieee" and state.numerics.dtype == np.float64
    np.testing.assert_array_equal(state.w, learner.state.w)
