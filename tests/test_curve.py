"""``seqd eval --curve``: the learning curve's figures against a direct computation, the CSV against the
evaluation's own total, and the pictures opened and looked at (size, axes that hold the curves)."""

from __future__ import annotations

import csv
import importlib.util
import json
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from seqd.cli import _curve, main

TEXT = b"".join(b"2026-11-25 03:%02d:%02d host sshd[%d]: Accepted publickey for user%d\n" % (i % 60, i % 7, 4000 + i, i % 5)
               for i in range(120))


def test_blocks_sliding_rates_and_running_means_match_a_direct_computation():
    rng = np.random.default_rng(3)
    bits = rng.exponential(1.0, 10_007)
    curve = _curve.Curve("x", len(bits), block=100)
    for part in np.array_split(bits, 13):  # fed in pieces that do not line up with the blocks
        curve.add(part)
    curve.finish()
    assert len(curve.bits) == 101 and np.isclose(sum(curve.bits), bits.sum())
    span = round(101 / _curve.SLIDING_SHARE)
    for i, (end, sliding, mean) in enumerate(curve.points()):
        assert end == min((i + 1) * 100, len(bits))
        assert mean == pytest.approx(bits[:end].sum() / end, rel=1e-12)
        start = max(0, i + 1 - span) * 100
        assert sliding == pytest.approx(bits[start:end].sum() / (end - start), rel=1e-9)
    assert _curve.Curve.for_size("big", 10**9).block == 500_000 and _curve.Curve.for_size("small", 10).block == 256


def test_the_csv_curve_ends_at_the_files_bits_per_byte(tmp_path, capsys):
    log = tmp_path / "auth.log"
    log.write_bytes(TEXT)
    target = tmp_path / "curve.csv"
    assert main(["eval", str(log), "--json", "--curve", str(target)]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = list(csv.DictReader(open(target)))
    assert rows[0].keys() == {"file", "position", "bits_per_byte_sliding", "bits_per_byte_so_far"}
    assert {r["file"] for r in rows} == {"auth.log"} and int(rows[-1]["position"]) == len(TEXT)
    assert float(rows[-1]["bits_per_byte_so_far"]) == pytest.approx(result["overall"]["bits_per_byte"], abs=1e-6)
    positions = [int(r["position"]) for r in rows]
    assert positions == sorted(positions) and len(rows) == -(-len(TEXT) // _curve.MIN_BLOCK)


needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="Matplotlib is not installed (pip install 'seqd[plot]')")


@needs_matplotlib
def test_the_png_is_a_picture_with_a_panel_per_file_and_the_curves_in_them(tmp_path):
    import matplotlib.image

    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(TEXT)
    second.write_bytes(TEXT[::-1])
    target = tmp_path / "curve.png"
    assert main(["eval", str(first), str(second), "--curve", str(target), "--reference", "xz=0.9"]) == 0
    head = target.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width >= 600 and height >= 300
    pixels = matplotlib.image.imread(target)
    assert pixels.std() > 0.05  # not a blank canvas
    curves = [_curve.Curve.for_size(n, len(TEXT)) for n in ("a.log", "b.log")]
    for c in curves:
        c.add(np.linspace(5, 0.5, len(TEXT)))
        c.finish()
    fig = _curve.figure(curves, [("xz", 0.9)], "t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 2
    for ax in panels:
        lines = ax.get_lines()
        assert len(lines) == 3 and all(len(line.get_xdata()) > 0 for line in lines)  # two curves, one reference
        assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 0.9 and "bits/byte" in ax.get_title()


@needs_matplotlib
def test_the_svg_is_an_svg(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(TEXT)
    target = tmp_path / "curve.svg"
    assert main(["eval", str(log), "--curve", str(target)]) == 0
    root = ET.parse(target).getroot()
    assert root.tag.endswith("svg") and len(list(root.iter("{http://www.w3.org/2000/svg}path"))) > 5


def test_curve_mistakes_are_told_before_the_work(tmp_path, capsys, monkeypatch):
    log = tmp_path / "a.log"
    log.write_bytes(TEXT)
    assert main(["eval", str(log), "--curve", str(tmp_path / "c.jpg")]) == 1
    assert "one of .csv, .png, .svg" in capsys.readouterr().err
    assert main(["eval", str(log), "--curve", str(tmp_path / "nowhere" / "c.csv")]) == 1
    assert "no folder" in capsys.readouterr().err
    assert main(["eval", str(log), "--reference", "xz=0.5"]) == 1
    assert "with --curve" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # a usage error: argparse's exit, code 2
        main(["eval", str(log), "--curve", str(tmp_path / "c.csv"), "--reference", "xz"])
    assert usage.value.code == 2 and "NAME=BITS_PER_BYTE" in capsys.readouterr().err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["eval", str(log), "--curve", str(tmp_path / "c.png")]) == 1
    assert "pip install 'seqd[plot]'" in capsys.readouterr().err
    assert not list(tmp_path.glob("c.*"))
