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

from seqd.core import faces, learners

from seqd import __version__

from . import _curve, _settings
from ._display import StatusLine, json_safe

CHUNK = 1 << 16


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Stream each file, byte by byte, through a fresh online learner (predict, then learn) and report "
        "its prequential code length: bits per byte, total bits, throughput and memory. The model is a preset, "
        "the same for every input, as a daemon stream's: 'bytes' (the default: the byte model, bitwise, "
        "seqd compress's), 'glnn' (seed 000's GLNN alone), a baseline ('ctw', 'esn', 'lstm', 'gru', 'scornn', "
        "'enrnn', 'rehearsal'), or a byte model's frozen version ('bytes-12', 'bitwise-2', ...); --set changes "
        "one of its settings, --settings lists them."
    )
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--preset", choices=tuple(MODELS), default="bytes", metavar="PRESET",
                   help=f"the model (default bytes); one of {', '.join(MODELS)}")
    _settings.add_arguments(p, "the preset's model")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--curve", type=Path, metavar="FILE.png|.svg|.csv",
                   help="write the learning curves: bits per byte along each file (a picture needs Matplotlib: "
                        "pip install 'seqd[plot]'; the CSV needs nothing)")
    p.add_argument("--reference", type=_curve.parse_reference, action="append", default=[], metavar="NAME=BPB",
                   help="a peer's bits per byte, drawn as a line beside the curves (repeat for several)")
    p.set_defaults(run=_eval)


def _frozen(face, preset: str):
    return lambda **changes: face.preset(preset, **changes)


# every preset (core/learners.py) and every byte model's frozen version (core/faces.py): its model's configuration
# class, and how the preset builds it from settings
MODELS = {name: (learners.MODELS[model].config, make) for name, (model, make) in learners.PRESETS.items()}
MODELS.update({row.preset: (face.config, _frozen(face, row.preset)) for face in faces.FACES
               for row in face.versions.rows[face.versions.served_from:] if row.preset not in MODELS})


def _config(args):
    """The preset with the settings ``--set`` gave; a name its model does not have is an error."""
    _, make = MODELS[args.preset]
    preset = make(alphabet_cap=256)
    return make(**{"alphabet_cap": 256, **_settings.parse(args.settings_given, preset)})


def _learner(config):
    """A fresh learner of ``config``'s model: a byte model's as a process of one stream has it (its face's)."""
    face = faces.face_of(config)
    return learners.learner_for(config) if face is None else face.solo(config)


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
    if args.list_settings:
        print(_settings.listing(config, args.preset))
        return 0
    if not args.files:
        raise ValueError("no files given: seqd eval FILE... (--settings lists the preset's settings)")
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
