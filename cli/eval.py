"""``seqd eval``: prequential code length of files under a fresh online learner each."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

from seqd.core import learners
from seqd.core.online import OnlineConfig
from seqd.core.online.config import SELECTED_STEPS

from seqd import __version__

from . import _curve
from ._display import StatusLine, json_safe

CHUNK = 1 << 16


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Stream each file, byte by byte, through a fresh online learner (predict, then learn) and report "
        "its prequential code length: bits per byte, total bits, throughput and memory. The model is a preset, "
        "the same for every input: 'bytes' (the default, OnlineConfig.bytes_default(): a small GLNN plus context "
        "units and their mixer) or 'glnn' (seed 000's GLNN alone, OnlineConfig()), "
        "or the baselines 'ctw' (context-tree weighting, seed 000's sanity check), 'esn' (a leaky echo-state "
        "network, seed 001), 'lstm' and 'gru' (an LSTM, gated recurrent units: trained by truncated "
        "back-propagation, seed 001), 'scornn' (seed 002's orthogonal RNN) and 'enrnn' (seed 002's ENRNN: the scoRNN "
        "with a short-term state of spectral radius 1), as a stream's in the daemon; each setting below changes the "
        "preset's."
    )
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--preset", choices=tuple(MODELS), default="bytes",
                   help="the model the settings below change: bytes (default), glnn, ctw (context-tree weighting: "
                        "--depth, --alpha, --node-bits, --seed) or esn (an echo-state network: --units, "
                        "--connections, --spectral-radius, --leak, --input-scale, --seed and the --writing-* settings) or lstm "
                        "(an LSTM: --cells, --layers, --horizon, --learning-rate, --clip, --init-scale, "
                        "--forget-bias, --seed) or gru (the same settings) or scornn (--units, --negatives, --horizon, "
                        "--learning-rate, --skew-rate, --clip, --init-scale, --seed) or enrnn (scornn's and --short, "
                        "--[no-]coupling, --margin)")
    defaults, glnn = OnlineConfig.bytes_default(), OnlineConfig()
    choices = {"model": ("glnn", "gnn"), "method": ("rbpm", "ruop", "qdrbpm", "qdruop"), "activation": ("tanh", "logistic"),
               "selected_step": SELECTED_STEPS}
    notes = {"transition_rate": "initial eta_tau (None: 1/units)", "window": "truncated BPTT window K",
             "input_scale": "multiplies the reading rates of eq. 32", "units": "recurrent units N",
             "degree": "incoming units per unit, self-loop included"}
    for field in dataclasses.fields(OnlineConfig):
        if field.name == "alphabet_cap":  # files are byte streams: 256
            continue
        flag = "--" + field.name.replace("_", "-")
        value = getattr(defaults, field.name)
        kind = float if field.name == "transition_rate" else type(value)
        note = notes.get(field.name, "")
        shown = (lambda v: ",".join(map(str, v)) or "''") if isinstance(value, tuple) else str
        other = getattr(glnn, field.name)
        helptext = f"{note + '; ' if note else ''}default {shown(value)}" \
            + (f" (glnn: {shown(other)})" if other != value else "")
        # a setting not given is the preset's: the flags leave no attribute unless they are used
        if isinstance(value, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=helptext)
        elif isinstance(value, tuple):
            p.add_argument(flag, type=_int_tuple, default=argparse.SUPPRESS, metavar="K,K,...",
                           help=f"comma-separated, '' for none; {helptext}")
        else:
            p.add_argument(flag, type=kind, default=argparse.SUPPRESS, choices=choices.get(field.name), help=helptext)
    glnn_settings = {f.name for f in dataclasses.fields(OnlineConfig)}
    others: dict[str, list] = {}  # a baseline's setting the GLNN has not: the models that have it, their defaults
    for name, model in learners.MODELS.items():
        if model.config is OnlineConfig:
            continue
        baseline = model.config()
        for field in dataclasses.fields(baseline):
            if field.name not in glnn_settings:  # else the GLNN's flag serves (--units, --seed, ...)
                others.setdefault(field.name, []).append((name, getattr(baseline, field.name)))
    for setting, having in others.items():
        defaults = ", ".join(f"{name} {value}" for name, value in having)
        how = {"action": argparse.BooleanOptionalAction} if isinstance(having[0][1], bool) else {"type": type(having[0][1])}
        p.add_argument("--" + setting.replace("_", "-"), **how, default=argparse.SUPPRESS,
                       help=f"{'/'.join(name for name, _ in having)} only; default {defaults}")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--curve", type=Path, metavar="FILE.png|.svg|.csv",
                   help="write the learning curves: bits per byte along each file (a picture needs Matplotlib: "
                        "pip install 'seqd[plot]'; the CSV needs nothing)")
    p.add_argument("--reference", type=_curve.parse_reference, action="append", default=[], metavar="NAME=BPB",
                   help="a peer's bits per byte, drawn as a line beside the curves (repeat for several)")
    p.set_defaults(run=_eval)


def _int_tuple(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.replace(" ", "").split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


# every preset (core/learners.py): its model's configuration class, and how the preset builds it from settings
MODELS = {name: (learners.MODELS[model].config, make) for name, (model, make) in learners.PRESETS.items()}


def _config(args):
    """The preset with the settings given on the command line; a setting its model does not have is an error."""
    kind, make = MODELS[args.preset]
    names = {f.name for model, _ in MODELS.values() for f in dataclasses.fields(model)}
    values = {name: getattr(args, name) for name in sorted(names) if hasattr(args, name)}
    own = {f.name for f in dataclasses.fields(kind)}
    foreign = [name for name in values if name not in own]
    if foreign:
        having = [p for p, (model, _) in MODELS.items() if foreign[0] in {f.name for f in dataclasses.fields(model)}]
        raise ValueError(f"--{foreign[0].replace('_', '-')} is a setting of {', '.join(having)}, not of {args.preset}")
    return make(**{"alphabet_cap": 256, **values})


def _learner(config):
    """A fresh learner of ``config``'s model."""
    return learners.learner_for(config)


def evaluate_file(path: Path, config, progress=None, curve: bool = False) -> dict:
    """One file through a fresh learner; with ``curve``, the result's "curve" is its learning curve."""
    data = path.read_bytes()
    if not data:
        raise ValueError(f"{path}: file is empty")
    learner = _learner(config)
    blocks = _curve.Curve.for_size(path.name, len(data)) if curve else None
    total_bits = 0.0
    cpu = 0.0
    impossible = 0  # symbols the model gave probability 0: an infinite code length
    for start in range(0, len(data), CHUNK):
        chunk = data[start:start + CHUNK]
        t0 = time.process_time()
        bits = learner.learn(chunk)
        cpu += time.process_time() - t0
        total_bits += float(bits.sum())
        impossible += int((bits == math.inf).sum())
        if blocks is not None:
            blocks.add(bits)
        if progress is not None:
            progress(path, start + len(chunk), len(data), total_bits)
    return {
        "file": str(path),
        "bytes": len(data),
        "bits": total_bits,
        "bits_per_byte": total_bits / len(data),
        "cpu_seconds": cpu,
        "bytes_per_second": len(data) / cpu if cpu > 0 else float("inf"),
        "learner_state_bytes": learner.state_bytes,  # what the configuration allows
        "learner_resident_bytes": learner.resident_bytes,  # what it took at the end (tables that grow, history)
        "stats": learner.stats,
        "impossible_symbols": impossible,
        **({"curve": blocks.finish()} if blocks is not None else {}),
    }


def _progress_line() -> Callable:
    """A progress display for ``evaluate_file``: a file's share done and its bits per byte so far."""
    line = StatusLine(enabled=True)

    def show(path, done, total, bits):
        line.show(f"  {path.name}: {100 * done / total:5.1f}%  {bits / done:.4f} bits/byte")
        if done == total:
            line.clear()
    return show


def _eval(args) -> int:
    config = _config(args)
    paths = [Path(f) for f in args.files]
    for p in paths:
        if p.is_dir():
            raise ValueError(f"{p}: is a directory")
        if not p.is_file():
            raise ValueError(f"{p}: no such file")
    if args.curve is not None:
        _curve.check_target(args.curve)
    elif args.reference:
        raise ValueError("--reference draws beside a curve: ask for one with --curve")
    show = _progress_line() if (sys.stderr.isatty() and not args.json) else None
    _learner(config).learn(b"warm up")  # compile (or load) the kernels outside the timings
    results = [evaluate_file(p, config, show, curve=args.curve is not None) for p in paths]
    if args.curve is not None:
        curves = [r.pop("curve") for r in results]
        _curve.write(args.curve, curves, args.reference, f"seqd {__version__} eval: bits per byte along each file")
        print(f"seqd eval: learning curves written to {args.curve}", file=sys.stderr)
    for r in results:
        if r["impossible_symbols"]:
            print(f"seqd eval: {r['file']}: the model gave {r['impossible_symbols']} symbol(s) probability 0, so "
                  "its code length is infinite (a .sqd file still codes them: the coder gives every symbol a "
                  "nonzero share)", file=sys.stderr)
    total_bytes = sum(r["bytes"] for r in results)
    total_bits = sum(r["bits"] for r in results)
    total_cpu = sum(r["cpu_seconds"] for r in results)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    overall = {
        "bytes": total_bytes, "bits": total_bits, "bits_per_byte": total_bits / total_bytes,
        "cpu_seconds": total_cpu, "bytes_per_second": total_bytes / total_cpu if total_cpu > 0 else float("inf"),
        "peak_rss_bytes": peak,
    }
    if args.json:
        json.dump(json_safe({"config": dataclasses.asdict(config), "files": results, "overall": overall}),
                  sys.stdout, indent=1, allow_nan=False)  # infinite code lengths and rates as null
        print()
        return 0
    width = max(len(p.name) for p in paths)
    print(f"{'file':{width}s} {'bytes':>10s} {'bits/byte':>9s} {'total bits':>12s} {'bytes/s':>9s} {'memory':>9s}")
    for p, r in zip(paths, results):
        print(f"{p.name:{width}s} {r['bytes']:10d} {r['bits_per_byte']:9.4f} {r['bits']:12.0f} "
              f"{r['bytes_per_second']:9.0f} {r['learner_resident_bytes'] / 1e6:8.2f}M")
    print(f"{'overall':{width}s} {total_bytes:10d} {overall['bits_per_byte']:9.4f} {total_bits:12.0f} "
          f"{overall['bytes_per_second']:9.0f}   peak RSS {peak / 1e6:.0f} MB")
    return 0
