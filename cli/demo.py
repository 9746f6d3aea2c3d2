"""``seqd demo``: one minute of seed 000's batch training, on the task its Example 1 shows.

A GLNN of 45 units, trained by the quasi-diagonal Hessian with the RBPM
modulus, learns the alphabet with insertions from 1000 training lines; its
validation regret is printed as it goes (the same lines as ``seqd train``),
and the run stops early once an independent sequence shows overfitting.
"""

from __future__ import annotations

import argparse

from seqd.core.training.experiment import Experiment, run

from .train import print_point, report

DEMO_UNITS = 45
DEMO_EVALUATIONS = 25
DEMO_PATIENCE = 8


def configure(d: argparse.ArgumentParser) -> None:
    d.add_argument("--seconds", type=float, default=60.0, help="CPU budget (default 60)")
    d.set_defaults(run=_demo)


def _demo(args) -> int:
    exp = Experiment(task="alphabet", model="glnn", method="rbpm", units=DEMO_UNITS, degree=3, seconds=args.seconds,
                     evaluations=DEMO_EVALUATIONS, patience=DEMO_PATIENCE)
    print(f"seqd demo: a GLNN ({DEMO_UNITS} units, QDH + RBPM) learns the alphabet with insertions (seed 000, Example 1)")
    print("from 1000 training lines. Validation regret = bits lost to the true generating model on an independent")
    print("sequence; the run stops once a third sequence shows it has begun to overfit.\n")
    outcome = run(exp, progress=print_point)
    report(outcome)
    print("\nNext: `seqd train --help` for every task, model and method; `seqd eval FILE` to learn a file online.")
    return 0
