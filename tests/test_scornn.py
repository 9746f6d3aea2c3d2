"""The scoRNN learner (``seqd.core.scornn``) against a NumPy reference, Theorem 2.5.3's gradient against finite
differences, and W's orthogonality.

The learner's interface is held by the contract suite (``contract.py``: entries ``scornn-*``); here, what it
computes.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core.scornn import SCORNNConfig, SCORNNLearner
from seqd.core.scornn.cayley import cayley, skew_gradient


# (at horizon 3 the no-negatives stream drives the model unstable, 20-bit symbols, where the two ways of
# inverting I + A part by 1e-7 after 180 symbols)
@pytest.mark.parametrize("settings", [dict(), dict(negatives=0, horizon=4), dict(skew_rate=0.0, horizon=1)],
                         ids=["default", "no-negatives", "fixed-w"])
def test_code_lengths_are_the_numpy_reference(settings):
    """Symbol by symbol, over a stream that fills its alphabet: the steps, the softmax, the windows'
    back-propagation, the Cayley steps of A, the open alphabet."""
    config = SCORNNConfig(alphabet_cap=5, units=6, **settings)
    rng = np.random.default_rng(4)
    x = np.resize(rng.permutation(5), 200)
    noisy = rng.random(200) < 0.2
    x[noisy] = rng.integers(0, 5, noisy.sum())
    np.testing.assert_allclose(SCORNNLearner(config).learn(x), naive.scornn_bits(x, 5, config), rtol=1e-8,
                               atol=1e-10)


def test_the_skew_gradient_is_the_finite_difference_through_the_cayley_transform():
    """Theorem 2.5.3: for L(W) = sum G * W (any G), dL/dA_ij (A_ji = -A_ij moving with it) is (V^T - V)_ij."""
    N = 5
    rng = np.random.default_rng(1)
    M = rng.normal(size=(N, N))
    A, d, G = (M - M.T) / 2, np.array([1.0, -1.0, 1.0, -1.0, -1.0]), rng.normal(size=(N, N))
    inverse, w, work = np.zeros((N, 2 * N)), np.zeros((N, N)), np.zeros((2, N, N))
    cayley(A, d, inverse, w)
    np.testing.assert_allclose(w, naive.cayley(A, d), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(inverse[:, N:], np.linalg.inv(np.eye(N) + A), rtol=1e-12, atol=1e-14)
    skew_gradient(G, inverse, w, d, work)
    eps = 1e-6
    for i in range(N):
        for j in range(N):
            if i == j:
                continue
            step = np.zeros((N, N))
            step[i, j], step[j, i] = eps, -eps
            fd = (np.sum(G * naive.cayley(A + step, d)) - np.sum(G * naive.cayley(A - step, d))) / (2 * eps)
            # the theorem's dL/dA_ij is along E_ij - E_ji (A_ji moves with A_ij), as its proof takes it
            assert work[1, i, j] == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_w_stays_orthogonal_and_a_skew_symmetric_while_it_learns():
    learner = SCORNNLearner(SCORNNConfig(alphabet_cap=16, units=12, negatives=5, skew_rate=0.5))
    rng = np.random.default_rng(2)
    learner.learn(rng.integers(0, 16, 3000))
    st = learner.state
    assert np.abs(st.w @ st.w.T - np.eye(12)).max() < 1e-10
    assert np.array_equal(st.skew, -st.skew.T) and np.abs(st.skew).max() > 0.0
    assert list(st.signs[:5]) == [-1.0] * 5 and list(st.signs[5:]) == [1.0] * 7


@pytest.mark.parametrize("settings, message", [
    (dict(units=0), "units must be in"), (dict(negatives=9, units=8), "negatives must be in"),
    (dict(skew_rate=-1.0), "skew_rate in"), (dict(horizon=0), "horizon must be in"),
    (dict(units=8, short=8, clip=1.0), "short must be in"), (dict(units=8, short=2), "> 0 for an ENRNN"),
    (dict(units=8, short=4, negatives=5, clip=1.0), "negatives must be in"), (dict(clip=-1.0), "clip must be"),
    (dict(units=8, short=2, clip=1.0, margin=2.0), "margin must be"),
    (dict(units=8, short=2, clip=1.0, coupling=1), "coupling must be")])
def test_a_bad_setting_is_a_clear_error(settings, message):
    with pytest.raises(ValueError, match=message):
        SCORNNConfig(**settings)


# -- the ENRNN (SCORNNConfig(short=m)): seed 002 §2.7 --------------------------------------------------------


def _matrices(rng, m, kind):
    if kind == "gaussian":
        return rng.normal(size=(m, m))
    if kind == "symmetric":
        M = rng.normal(size=(m, m))
        return M + M.T
    T = np.zeros((m, m))  # eq. 2.97's rotation blocks, perturbed: complex pairs of nearby moduli
    for block in range(m // 2):
        t, gamma = rng.uniform(0, np.pi / 2), rng.uniform(-1, 1)
        T[2 * block:2 * block + 2, 2 * block:2 * block + 2] = gamma * np.array([[np.cos(t), -np.sin(t)],
                                                                                [np.sin(t), np.cos(t)]])
    if m % 2:
        T[-1, -1] = rng.uniform(-1, 1)
    return T + 0.05 * rng.normal(size=(m, m))


@pytest.mark.parametrize("kind", ["gaussian", "symmetric", "rotations"])
def test_the_eigenvalues_and_the_dominant_eigenvectors_are_numpys(kind):
    from seqd.core.scornn.eigen import dominant, eigenvalues, eigenvector, hessenberg, scale_of

    rng = np.random.default_rng(5)
    for m in [1, 2, 3, 4, 7, 12, 24, 31]:
        T = _matrices(rng, m, kind)
        h, values = T.copy(), np.empty(m, complex)
        hessenberg(h, np.empty(m))
        assert not np.tril(h, -2).any()
        assert eigenvalues(h, values) == 0
        reference = np.linalg.eigvals(T)
        scale = max(1.0, np.abs(reference).max())
        for value in values:  # each computed eigenvalue is one of NumPy's, and the multisets agree
            assert np.abs(reference - value).min() < 1e-10 * scale
        np.testing.assert_allclose(np.sort_complex(values), np.sort_complex(reference), atol=1e-9 * scale)
        lam = values[dominant(values)]
        assert abs(lam) == pytest.approx(np.abs(reference).max(), rel=1e-12) and lam.imag >= 0.0
        u, w, work = np.empty(m, complex), np.empty(m, complex), np.empty((m, m + 1), complex)
        assert eigenvector(T, False, lam, scale_of(T), work, u) and eigenvector(T, True, lam, scale_of(T), work, w)
        assert np.linalg.norm(T @ u - lam * u) < 1e-10 * scale and np.linalg.norm(u) == pytest.approx(1.0)
        assert np.linalg.norm(T.T @ w - lam * w) < 1e-10 * scale


@pytest.mark.parametrize("magnitude", [1e-200, 1e-80, 1e80, 1e200])
def test_the_spectrum_of_a_matrix_of_any_magnitude(magnitude):
    """T scaled by a power of two before the QR iteration: its squares neither overflow nor underflow."""
    from seqd.core.scornn.eigen import scale_of
    from seqd.core.scornn.enrnn import normalized_gradient, spectrum_of

    rng = np.random.default_rng(9)
    T0 = rng.normal(size=(6, 6))
    T = T0 * magnitude
    alpha, beta, rho = spectrum_of(T, np.empty((7, 6)), np.empty(6, complex))
    assert rho == pytest.approx(np.abs(np.linalg.eigvals(T0)).max() * magnitude, rel=1e-12)
    assert scale_of(T) >= np.abs(T).max() > scale_of(T) / 2
    out, G = np.empty((6, 6)), rng.normal(size=(6, 6))
    assert normalized_gradient(T, G, T / rho, alpha, beta, 0.0, np.empty((6, 7), complex), np.empty((2, 6), complex),
                               out)
    np.testing.assert_allclose(out * magnitude, naive.eigenvalue_normalized_gradient(T0, G, 0.0), rtol=1e-8)
    assert spectrum_of(np.full((3, 3), np.inf), np.empty((4, 3)), np.empty(3, complex))[2] == -1.0


def test_a_multiple_dominant_eigenvalue_falls_back_to_the_plain_step():
    from seqd.core.scornn.enrnn import normalized_gradient

    T = np.array([[1.2, 1.0], [1e-20, 1.2]])  # nearly a Jordan block: eigenvalues 1.2 +- 1e-10, v* u ~ 1e-10
    lam = naive.dominant_eigenpair(T)[0]
    assert not normalized_gradient(T, np.ones((2, 2)), T / abs(lam), lam.real, lam.imag, 0.0,
                                   np.empty((2, 3), complex), np.empty((2, 2), complex), np.empty((2, 2)))
    assert not normalized_gradient(np.zeros((2, 2)), np.ones((2, 2)), np.zeros((2, 2)), 0.0, 0.0, 0.0,
                                   np.empty((2, 3), complex), np.empty((2, 2), complex), np.empty((2, 2)))


@pytest.mark.parametrize("margin", [0.0, 0.1])
def test_the_normalised_gradient_is_the_finite_difference(margin):
    """Proposition 2.7.1: for L(W) = sum G * W with W = T / (rho(T) + margin), dL/dT by eq. 2.95 (exact in the
    margin), against central differences through NumPy's eigenvalues, and against NumPy's eigenvectors."""
    from seqd.core.scornn.enrnn import normalized_gradient

    rng = np.random.default_rng(6)
    for m in [2, 3, 5, 8]:
        T, G = rng.normal(size=(m, m)), rng.normal(size=(m, m))
        rho = np.abs(np.linalg.eigvals(T)).max()
        lam = naive.dominant_eigenpair(T)[0]
        out = np.empty((m, m))
        normalized_gradient(T, G, T / (rho + margin), lam.real, lam.imag, margin, np.empty((m, m + 1), complex),
                            np.empty((2, m), complex), out)
        np.testing.assert_allclose(out, naive.eigenvalue_normalized_gradient(T, G, margin), rtol=1e-9, atol=1e-12)

        def loss(t):
            return np.sum(G * t / (np.abs(np.linalg.eigvals(t)).max() + margin))

        eps = 1e-6
        for i in range(m):
            for j in range(m):
                step = np.zeros((m, m))
                step[i, j] = eps
                assert out[i, j] == pytest.approx((loss(T + step) - loss(T - step)) / (2 * eps), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("settings", [dict(short=3, coupling=True, clip=5.0), dict(short=4, clip=2.0, margin=0.1),
                                      dict(short=3, clip=20.0, learning_rate=0.3, horizon=3)],
                         ids=["coupled", "uncoupled-margin", "normalised"])
def test_enrnn_code_lengths_are_the_numpy_reference(settings):
    """The whole ENRNN learner against NumPy (eigenpairs by LAPACK there): its coupling and T steps, the
    normalisation switching on, the clipping."""
    config = SCORNNConfig(alphabet_cap=5, units=8, **settings)
    rng = np.random.default_rng(7)
    x = np.resize(rng.permutation(5), 300)
    noisy = rng.random(300) < 0.2
    x[noisy] = rng.integers(0, 5, noisy.sum())
    learner = SCORNNLearner(config)
    np.testing.assert_allclose(learner.learn(x), naive.scornn_bits(x, 5, config), rtol=1e-7, atol=1e-9)
    if settings.get("learning_rate") == 0.3:
        assert learner.state.spectrum[0] == 1.0  # the run reached the normalised regime


def test_enrnn_keeps_its_blocks_and_its_short_term_spectral_radius():
    config = SCORNNConfig(alphabet_cap=16, units=12, short=5, coupling=True, clip=5.0, learning_rate=0.1, horizon=3,
                          margin=0.05)
    learner = SCORNNLearner(config)
    bits = learner.learn(np.resize(np.random.default_rng(8).integers(0, 16, 37), 3000))  # a 37-symbol phrase
    assert bits[-200:].mean() < 0.05
    st, q = learner.state, 7
    assert not st.w[q:, :q].any()
    np.testing.assert_allclose(st.w[:q, :q] @ st.w[:q, :q].T, np.eye(q), atol=1e-12)
    assert st.spectrum[0] == 1.0
    rho = np.abs(np.linalg.eigvals(st.short_t)).max()
    assert np.abs(np.linalg.eigvals(st.w[q:, q:])).max() == pytest.approx(rho / (rho + 0.05), rel=1e-9)


def test_a_scornn_snapshot_of_the_first_format_restores():
    """Format 1 had neither the ENRNN's arrays nor its settings: restored, they are empty and the defaults."""
    import collections
    import dataclasses

    from seqd.core import arrays_snapshot
    from seqd.core.scornn.snapshot import MAGIC

    config = SCORNNConfig(alphabet_cap=6, units=4, horizon=3)
    learner = SCORNNLearner(config)
    learner.learn([0, 1, 2, 3, 4] * 20)
    old_fields = [f for f in learner.state._fields if f not in ("short_t", "step_t", "spectrum", "hess", "eig", "vectors")]
    Old = collections.namedtuple("Old", old_fields)
    OldConfig = dataclasses.make_dataclass("OldConfig", [(f.name, f.type, f.default) for f in dataclasses.fields(config)
                                                         if f.name not in ("short", "coupling", "margin", "clip")])
    old = arrays_snapshot.pack(MAGIC, 1, OldConfig(**{f.name: getattr(config, f.name)
                                                     for f in dataclasses.fields(OldConfig)}),
                               Old(*(getattr(learner.state, f) for f in old_fields)))
    restored = SCORNNLearner.from_bytes(old)
    assert restored.config == config
    np.testing.assert_array_equal(learner.learn([1, 2, 3] * 5), restored.learn([1, 2, 3] * 5))
    truncated = Old(*(getattr(learner.state, f) for f in old_fields))._replace(zs=learner.state.zs[:0])
    with pytest.raises(ValueError):
        SCORNNLearner.from_bytes(arrays_snapshot.pack(MAGIC, 1, OldConfig(**{f.name: getattr(config, f.name)
                                                      for f in dataclasses.fields(OldConfig)}), truncated))


def test_an_enrnn_snapshot_whose_short_term_block_its_t_does_not_give_is_refused():
    from seqd.core import arrays_snapshot
    from seqd.core.scornn.snapshot import MAGIC, VERSION

    config = SCORNNConfig(alphabet_cap=16, units=12, short=5, clip=5.0, learning_rate=0.1, horizon=3, margin=0.05)
    learner = SCORNNLearner(config)
    learner.learn(np.resize(np.random.default_rng(8).integers(0, 16, 37), 1500))
    assert learner.state.spectrum[0] == 1.0
    assert SCORNNLearner.from_bytes(learner.to_bytes()).state.spectrum[0] == 1.0

    def tampered(**arrays):
        state = learner.state._replace(**{k: v.copy() for k, v in arrays.items()})
        return arrays_snapshot.pack(MAGIC, VERSION, config, state)

    w = learner.state.w.copy()
    w[8, 9] = np.nextafter(w[8, 9], np.inf)
    huge = learner.state.short_t * 1e200
    spectrum = learner.state.spectrum.copy()
    spectrum[2] = -spectrum[2]
    for data in (tampered(w=w), tampered(short_t=huge), tampered(spectrum=spectrum),
                 tampered(short_t=np.zeros((5, 5)))):
        with pytest.raises(ValueError, match="W\\^\\(S\\) or a spectrum"):
            SCORNNLearner.from_bytes(data)
