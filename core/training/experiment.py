"""One run of seed 000's experimental protocol (Section 4).

A training sequence and an independent validation sequence are drawn from a
task's exact generative law; a network is trained on the first within a
budget; the second is scored with the regularised predictions of §4 and
reported as cumulative regret in bits against the true model (Table 1).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import tasks
from ..hmm import HMMTrainer, draw
from ..hmm.trainer import log2_probs
from ..model import ModelSpec, initialize, symbol_frequencies
from .batch import BatchTrainer, Evaluation, TrainConfig, evaluate
from . import lstm as lstm_batch
from .hessian_free import HessianFreeTrainer
from .readout_batch import BATCH_MODELS, METHODS as READOUT_METHODS, ReadoutTrainer, preset_config

# the networks (model.MODELS), seed 000's HMM trained by EM, its batch-trained LSTM (training/lstm.py: methods
# "plain" and "dhfb"), and the online GRU, scoRNN, ENRNN and echo-state network trained in batch
# (training/readout_batch.py: method "qdh")
TRAINED_MODELS = ("glnn", "gnn", "rnn", "hmm", "batch-lstm") + tuple(BATCH_MODELS)
# seqd's online learners by their presets (core/learners.py): they stream the training sequence (``steps`` passes,
# one by default) and then the validation sequence, which they score as they go on learning: the protocol of
# seed 000's CTW and bzip2 rows
ONLINE_MODELS = ("ctw", "esn", "lstm", "gru", "scornn", "enrnn", "rehearsal")


@dataclass(frozen=True)
class Experiment:
    """Everything that defines a run; hyper-parameters under their constructor names."""

    task: str = "alphabet"
    model: str = "glnn"  # one of TRAINED_MODELS
    method: str = "rbpm"  # the networks' training method (training.methods, or "hf": Hessian-free); an HMM's is EM
    units: int = 16  # units of a network, states of an HMM
    degree: int = 3  # incoming units per unit; an HMM's edges per state (0: the alphabet's size, seed 000's)
    activation: str = "tanh"
    seed: int = 0
    size: int | None = None  # lines / bars / blocks; None: the paper's size
    validation_size: int | None = None  # None: same as size
    length: int | None = None  # T of distant XOR, copying and adding; None: the task's default (tasks.TASK_OPTIONS)
    steps: int | None = None
    seconds: float | None = None
    evaluations: int = 20  # validation checkpoints along the run, log-spaced
    patience: int | None = None  # stop after this many checkpoints without a better stopping-sequence regret


@dataclass
class Outcome:
    experiment: Experiment
    alphabet_size: int
    train_symbols: int
    validation_symbols: int
    steps: int
    train_seconds: float
    rate_w: float | None  # the networks' last learning rates (None for an HMM)
    rate_tau: float | None
    train_log2_likelihood: float
    validation_true_log2_likelihood: float
    validation_regret: float  # at the end of the run
    validation_error_rate: float | None
    best_validation_regret: float  # best checkpoint along the run, chosen on the validation sequence itself
    best_validation_error_rate: float | None
    best_at_seconds: float
    stopped_early: bool  # the patience rule ended the run before its budget
    stopped_validation_regret: float  # at the checkpoint chosen on a third, independent stopping sequence
    stopped_validation_error_rate: float | None
    stopped_at_seconds: float
    stopped_regret_by_place: dict  # that checkpoint's regret split over the task's places (tasks.places)
    trajectory: list[float] = field(repr=False)  # training log2-likelihood after every step
    validation_curve: list[dict] = field(repr=False)  # checkpoints: seconds, step, regret, error rate
    wall_seconds: float = 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["experiment"] = asdict(self.experiment)
        return d


def _draw(exp: Experiment, stream: int, size: int | None) -> tasks.TaskSequence:
    takes_length = "length" in tasks.TASK_OPTIONS.get(exp.task, {})
    options = {"length": exp.length} if takes_length and exp.length is not None else {}
    return tasks.generate(exp.task, np.random.default_rng([exp.seed, stream]), size, **options)


def regret_by_place(seq: tasks.TaskSequence, where: dict[str, np.ndarray], log2_probs: np.ndarray) -> dict:
    """A model's regret on ``seq`` (bits; ``log2_probs`` its log2-probability of each symbol) split over the
    task's places (``tasks.places``): the sum over each place's scored positions of truth minus model."""
    scored = seq.predict_mask != 0.0
    per_symbol = np.zeros(len(seq))
    per_symbol[scored] = seq.predict_mask[scored] * (seq.true_log2_prob[scored] - log2_probs[scored])
    return {name: float(per_symbol[mask].sum()) for name, mask in where.items()}


def _trainer(exp: Experiment, train: tasks.TaskSequence, config: TrainConfig | None, A: int):
    """The trainer of ``exp``'s model on ``train``, and how it scores a sequence (an ``Evaluation``)."""
    rng = np.random.default_rng([exp.seed, 2])
    if exp.model == "hmm":
        if exp.degree < 0:
            raise ValueError(f"an HMM's degree must be >= 0 (0: the alphabet's size), got {exp.degree}")
        degree = min(exp.degree or A, exp.units)  # a state has at most one edge to each state
        frequencies = np.bincount(train.symbols, minlength=A)[:A] / len(train.symbols)
        trainer = HMMTrainer(draw(exp.units, degree, frequencies, rng), train.symbols)

        def score(tr, seq):
            return Evaluation.of(log2_probs(tr.params, seq.symbols), seq.predict_mask, seq.true_log2_likelihood)

        return trainer, score
    if exp.model == "batch-lstm":
        nu, _ = symbol_frequencies(train.symbols, train.predict_mask, A)
        params = lstm_batch.initialize(exp.units, exp.degree, nu, rng)
        trainer = lstm_batch.LSTMTrainer(params, train.symbols, train.predict_mask, exp.method, config or TrainConfig())

        def score(tr, seq):
            return lstm_batch.evaluate(tr.params, seq.symbols, seq.predict_mask, seq.true_log2_likelihood)

        return trainer, score
    if exp.model in BATCH_MODELS:
        if exp.method not in READOUT_METHODS:
            raise ValueError(f"{exp.model} trains by {', '.join(READOUT_METHODS)}, got method {exp.method!r}")
        name = BATCH_MODELS[exp.model]
        trainer = ReadoutTrainer(name, preset_config(name, A, exp.units, exp.seed), train.symbols,
                                 train.predict_mask, config or TrainConfig())

        def score(tr, seq):
            return tr.evaluate(seq.symbols, seq.predict_mask, seq.true_log2_likelihood)

        return trainer, score
    if exp.model not in TRAINED_MODELS:
        raise ValueError(f"unknown model {exp.model!r}; valid models: {', '.join(TRAINED_MODELS)}")
    spec = ModelSpec(exp.model, exp.units, exp.degree, exp.activation, A)
    nu, nu_tilde = symbol_frequencies(train.symbols, train.predict_mask, A)
    params = initialize(spec, nu, nu_tilde, rng)
    if exp.method == "hf":  # [MS11]'s Hessian-free optimisation, seed 000's distant-XOR comparator
        trainer = HessianFreeTrainer(spec, params, train.symbols, train.predict_mask)
    else:
        config = config or TrainConfig()
        if config.method != exp.method:
            config = TrainConfig(**{**asdict(config), "method": exp.method})
        trainer = BatchTrainer(spec, params, train.symbols, train.predict_mask, config)

    def score(tr, seq):
        return evaluate(spec, tr.params, seq.symbols, seq.predict_mask, seq.true_log2_likelihood)

    return trainer, score


def run_online(exp: Experiment, progress=None) -> Outcome:
    """One of seqd's online learners (``exp.model`` a preset of ``core/learners.py``, ``exp.units`` its units or
    cells, 0 for the preset's; CTW has neither) streams the training sequence ``exp.steps`` times (once if None), then the
    validation sequence; the regret is the validation part's prequential code length on the scored positions
    minus the true model's (seed 000's protocol for CTW and bzip2).  One checkpoint, at the end."""
    from .. import learners

    wall0 = time.perf_counter()
    train = _draw(exp, 0, exp.size)
    valid = _draw(exp, 1, exp.validation_size if exp.validation_size is not None else exp.size)
    A = len(train.alphabet)
    model, make = learners.PRESETS[exp.model]
    config = make(alphabet_cap=A)
    sized = {name: exp.units for name in ("units", "cells") if hasattr(config, name) and exp.units > 0}
    if sized and hasattr(config, "degree"):  # a rehearsing GLNN's unit reads at most every unit
        sized["degree"] = min(config.degree, exp.units)
    config = make(alphabet_cap=A, **sized) if sized else config
    learner = learners.MODELS[model].learner(config)
    passes = 1 if exp.steps is None else exp.steps
    if passes < 1:
        raise ValueError(f"an online learner streams the training sequence at least once, got {passes} passes")
    t0 = time.process_time()
    trajectory = [-float(learner.learn(train.symbols).sum()) for _ in range(passes)]
    bits = learner.learn(valid.symbols)
    seconds = time.process_time() - t0
    scored = valid.predict_mask != 0.0
    regret = float((bits * valid.predict_mask).sum()) + valid.true_log2_likelihood
    error = float(np.mean(bits[scored] >= 1.0)) if scored.any() else None
    point = {"seconds": seconds, "step": passes, "train_bits_per_symbol": -trajectory[-1] / len(train),
             "regret": regret, "error_rate": error, "xor_error_rate": error if exp.task == "xor" else None,
             "stopping_regret": regret, "regret_by_place": regret_by_place(valid, tasks.places(valid), -bits)}
    if progress is not None:
        progress(point)
    return Outcome(experiment=exp, alphabet_size=A, train_symbols=len(train), validation_symbols=len(valid),
                   steps=passes, train_seconds=seconds, rate_w=None, rate_tau=None,
                   train_log2_likelihood=trajectory[-1], validation_true_log2_likelihood=valid.true_log2_likelihood,
                   validation_regret=regret, validation_error_rate=error, best_validation_regret=regret,
                   best_validation_error_rate=error, best_at_seconds=seconds, stopped_early=False,
                   stopped_validation_regret=regret, stopped_validation_error_rate=error, stopped_at_seconds=seconds,
                   stopped_regret_by_place=point["regret_by_place"], trajectory=trajectory, validation_curve=[point],
                   wall_seconds=time.perf_counter() - wall0)


def run(exp: Experiment, config: TrainConfig | None = None, progress=None) -> Outcome:
    """Train per ``exp`` and score the validation sequence; ``progress(dict)`` sees each checkpoint."""
    if exp.model in ONLINE_MODELS:
        return run_online(exp, progress)
    if exp.steps is None and exp.seconds is None:
        raise ValueError("an experiment needs a step budget, a time budget, or both")
    wall0 = time.perf_counter()
    train = _draw(exp, 0, exp.size)
    valid_size = exp.validation_size if exp.validation_size is not None else exp.size
    valid = _draw(exp, 1, valid_size)
    stopping = _draw(exp, 3, valid_size)  # picks the early-stopping checkpoint without looking at `valid`
    A = len(train.alphabet)
    trainer, score = _trainer(exp, train, config, A)

    curve: list[dict] = []
    where = tasks.places(valid)

    def checkpoint():
        ev, stop = score(trainer, valid), score(trainer, stopping)
        point = {
            "seconds": trainer.train_seconds,
            "step": trainer.steps,
            # the networks' training cost is over the predicted symbols; EM's likelihood is over every symbol
            "train_bits_per_symbol": -trainer.log2_likelihood / (len(train) if exp.model == "hmm"
                                                                 else max(train.predict_mask.sum(), 1.0)),
            "regret": ev.regret,
            "error_rate": ev.error_rate,
            "xor_error_rate": ev.error_rate if exp.task == "xor" else None,
            "stopping_regret": stop.regret,
            "regret_by_place": regret_by_place(valid, where, ev.log2_probs),
        }
        curve.append(point)
        if progress is not None:
            progress(point)

    # checkpoints log-spaced over the budget (time if given, else steps), from 1/1000 of it to
    # the end: validation regret moves fastest early, and GLNNs can overfit (seed 000 §4)
    n_eval = max(1, exp.evaluations)
    total = exp.seconds if exp.seconds is not None else exp.steps
    fractions = np.geomspace(1e-3, 1.0, n_eval) if n_eval > 1 else np.ones(1)
    marks = iter(total * f for f in fractions)
    if exp.seconds is not None:
        measure = lambda tr: tr.train_seconds  # noqa: E731
    else:
        measure = lambda tr: tr.steps  # noqa: E731
    next_mark = [next(marks, None)]
    stopped_early = [False]

    def on_step(tr, rec):
        if next_mark[0] is not None and measure(tr) >= next_mark[0]:
            while next_mark[0] is not None and measure(tr) >= next_mark[0]:
                next_mark[0] = next(marks, None)
            checkpoint()
            if exp.patience is not None:
                best_k = min(range(len(curve)), key=lambda k: curve[k]["stopping_regret"])
                if len(curve) - 1 - best_k >= exp.patience:
                    stopped_early[0] = True
                    return True
        return False

    checkpoint()
    trainer.run(steps=exp.steps, seconds=exp.seconds, callback=on_step)
    if curve[-1]["step"] != trainer.steps:
        checkpoint()
    final = curve[-1]
    best = min(curve, key=lambda p: p["regret"])
    stopped = min(curve, key=lambda p: p["stopping_regret"])
    return Outcome(
        experiment=exp,
        alphabet_size=A,
        train_symbols=len(train),
        validation_symbols=len(valid),
        steps=trainer.steps,
        train_seconds=trainer.train_seconds,
        rate_w=trainer.rate_w,
        rate_tau=trainer.rate_tau,
        train_log2_likelihood=trainer.log2_likelihood,
        validation_true_log2_likelihood=valid.true_log2_likelihood,
        validation_regret=final["regret"],
        validation_error_rate=final["error_rate"],
        best_validation_regret=best["regret"],
        best_validation_error_rate=best["error_rate"],
        best_at_seconds=best["seconds"],
        stopped_early=stopped_early[0],
        stopped_validation_regret=stopped["regret"],
        stopped_validation_error_rate=stopped["error_rate"],
        stopped_at_seconds=stopped["seconds"],
        stopped_regret_by_place=stopped["regret_by_place"],
        trajectory=[r.log2_likelihood for r in trainer.history],
        validation_curve=curve,
        wall_seconds=time.perf_counter() - wall0,
    )
