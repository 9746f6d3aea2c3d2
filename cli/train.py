"""``seqd train``: seed 000's batch training on its synthetic tasks, with its validation regret as it goes."""

from __future__ import annotations

import argparse
import json
import sys

from seqd.core.model import ACTIVATIONS
from seqd.core.tasks import TASKS
from seqd.core.training.batch import TrainConfig
from seqd.core.training.experiment import ONLINE_MODELS, TRAINED_MODELS, Experiment, run
from seqd.core.training.lstm import METHODS as LSTM_METHODS
from seqd.core.training.methods import METHODS
from seqd.core.training.readout_batch import BATCH_MODELS
from seqd.core.training.readout_batch import METHODS as READOUT_METHODS


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Draw a training and an independent validation sequence from a task's exact law, train with "
        "the batch algorithm of Ollivier (2015) Section 2 (or, for --model hmm, a hidden Markov model by EM, "
        "the paper's sanity check; for --model batch-lstm, the paper's LSTM baseline by plain gradient or DH + FB; "
        "for batch-gru, batch-scornn, batch-enrnn and batch-esn, the online learners' models trained on the whole "
        "sequence: QDH on the readout, the clipped gradient through the whole sequence on the recurrent weights), "
        "and report the validation regret in bits (true model minus trained model, "
        "Table 1). The online models (ctw, esn, lstm, gru, scornn: seqd eval's presets) instead stream the "
        "training sequence (--steps passes, one by default) and then the validation sequence, which they score as "
        "they learn, as the paper's CTW and bzip2 rows."
    )
    p.add_argument("--task", choices=TASKS, default="alphabet")
    p.add_argument("--model", choices=TRAINED_MODELS + ONLINE_MODELS, default="glnn")
    p.add_argument("--method", choices=tuple(METHODS) + ("hf",) + tuple(m for m in LSTM_METHODS if m not in METHODS)
                   + tuple(READOUT_METHODS),
                   help="a network's training method (default rbpm; hf: Hessian-free optimisation with structural "
                   "damping, Martens and Sutskever 2011); batch-lstm's: plain or dhfb (default dhfb); the other "
                   "batch-* models': qdh (the default); an HMM learns by EM")
    p.add_argument("--units", type=int, help="number of units N, an HMM's states, an online model's units or cells "
                   "(default 16; an online model's: its preset's)")
    p.add_argument("--degree", type=int, help="incoming units per unit, self-loop included (default 3); an HMM's "
                   "edges per state, its loop included (default: the alphabet's size, as seed 000)")
    p.add_argument("--activation", choices=ACTIVATIONS, default="tanh")
    p.add_argument("--clip", type=float, default=0.0, help="a network's or batch LSTM's step direction longer than "
                   "this is rescaled to it (gradient clipping, seed 001 Algorithm 2; default 0: off)")
    budget = p.add_argument_group("budget (at least one)")
    budget.add_argument("--seconds", type=float, help="CPU seconds of training")
    budget.add_argument("--steps", type=int, help="number of gradient steps (w and tau alternate); EM steps; an online "
                        "model's passes over the training sequence (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, help="lines / bars / blocks per sequence (default: the paper's)")
    p.add_argument("--length", type=int, help="T: distant XOR's line length (default 100), the copying problem's "
                   "gap (2000) or the adding problem's sequence length (750)")
    p.add_argument("--evaluations", type=int, default=20, help="validation checkpoints along the run (default 20)")
    p.add_argument("--patience", type=int, help="stop once this many checkpoints pass without a better regret on "
                   "an independent stopping sequence (default: use the whole budget)")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.set_defaults(run=_train)


def _experiment(args) -> Experiment:
    online = args.model in ONLINE_MODELS
    if args.seconds is None and args.steps is None and not online:
        raise ValueError("give a budget: --seconds S and/or --steps K")
    if args.patience is not None and args.patience < 1:
        raise ValueError("--patience must be at least 1 checkpoint (leave it out to use the whole budget)")
    return Experiment(
        task=args.task, model=args.model,
        method=args.method or ("dhfb" if args.model == "batch-lstm" else "qdh" if args.model in BATCH_MODELS
                               else "rbpm"),
        units=args.units if args.units is not None else (0 if online else 16),
        degree=args.degree if args.degree is not None else (0 if args.model == "hmm" else 3),
        activation=args.activation, seed=args.seed, size=args.size, length=args.length,
        steps=args.steps, seconds=args.seconds, evaluations=args.evaluations, patience=args.patience,
    )


def print_point(point: dict) -> None:
    """One validation checkpoint as a line: CPU time, step, training cost, validation regret."""
    err = "" if point.get("xor_error_rate") is None else f"  error {100 * point['xor_error_rate']:6.2f}%"
    print(
        f"  {point['seconds']:8.1f} s  step {point['step']:6d}  train {point['train_bits_per_symbol']:.4f} bits/symbol"
        f"  validation regret {point['regret']:10.1f} bits{err}",
        flush=True,
    )


def report(outcome) -> None:
    """The run's outcome in three lines: the experiment, its regrets, its learning rates and budget."""
    e = outcome.experiment
    if e.model == "hmm":
        what = f"HMM by EM, {e.units} states, degree {min(e.degree or outcome.alphabet_size, e.units)}"
    elif e.model == "batch-lstm":
        what = f"LSTM ({LSTM_METHODS.get(e.method, e.method).split(' (')[0]}) N={e.units} d={e.degree}"
    elif e.model in BATCH_MODELS:
        what = f"{e.model} (QDH on the readout, the gradient on the recurrent weights), {e.units} units"
    elif e.model in ONLINE_MODELS:
        what = f"online {e.model} (preset{f', {e.units} units' if e.units else ''}), {e.steps or 1} training pass(es)"
    else:
        what = f"{e.model.upper()} {e.method} N={e.units} d={e.degree} {e.activation}"
    print(
        f"{e.task}: {what}, "
        f"{outcome.train_symbols} training / {outcome.validation_symbols} validation symbols"
    )
    split = "; ".join(f"{name} {bits:.1f}" for name, bits in outcome.stopped_regret_by_place.items())
    if e.model in ONLINE_MODELS:  # one figure: the validation sequence scored as it was learned
        print(f"  validation regret: {outcome.validation_regret:.1f} bits, scored as the learner went on learning")
        if split:
            print(f"    of which: {split}")
        print(f"  {outcome.train_seconds:.1f} CPU s")
        return
    print(f"  validation regret: {outcome.validation_regret:.1f} bits at the end; "
          f"{outcome.stopped_validation_regret:.1f} at the checkpoint an independent stopping sequence picks "
          f"({outcome.stopped_at_seconds:.0f} s); best checkpoint {outcome.best_validation_regret:.1f}")
    if split:
        print(f"    of which, at the picked checkpoint: {split}")
    if outcome.rate_w is None:  # EM
        print(f"  {outcome.steps} EM steps in {outcome.train_seconds:.1f} CPU s")
    elif e.method == "hf":
        print(f"  damping: lambda {outcome.rate_w:.3g}, structural mu lambda {outcome.rate_tau:.3g}; {outcome.steps} "
              f"Hessian-free steps in {outcome.train_seconds:.1f} CPU s")
    else:
        print(f"  learning rates: eta_w {outcome.rate_w:.3g}, eta_tau {outcome.rate_tau:.3g}; {outcome.steps} steps "
              f"in {outcome.train_seconds:.1f} CPU s")


def _train(args) -> int:
    exp = _experiment(args)
    config = None
    if args.clip:
        if exp.model == "hmm" or exp.model in ONLINE_MODELS or exp.method == "hf":
            raise ValueError("--clip is a setting of the gradient-trained batch networks (glnn, gnn, rnn, batch-*); "
                             "an online model's clip is its preset's (seqd eval --clip), an HMM learns by EM, "
                             "Hessian-free steps are damped instead")
        config = TrainConfig(method=exp.method, clip=args.clip)
    if args.json:
        outcome = run(exp, config)
        json.dump(outcome.to_dict(), sys.stdout, indent=1)
        print()
    else:
        print("CPU time, step, training cost, validation regret:")
        outcome = run(exp, config, progress=print_point)
        report(outcome)
    return 0
