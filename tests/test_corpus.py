"""Every ``.sqd`` file in ``tests/corpus/format-<N>/`` decodes to the bytes its manifest names, for ever.

Each format version's corpus is written once, by the seqd that introduced
the version (``tests/corpus/make.py``), and never rewritten; the policy is in
``docs/format.md``.  Format 1 was coded with the C library's exp/log/tanh, so
its files decode where that library gives the bits it gave when they were
written (glibc on x86-64, where they were made); every later format is coded
with seqd's own functions and must decode everywhere.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from early import Early

from seqd.core.container import FORMAT_VERSION, OLDEST_FORMAT, decompress
from seqd.core.faces import DEFAULT, FACES

CORPUS = Path(__file__).resolve().parent / "corpus"
GLIBC_X86_64 = sys.platform == "linux" and platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc"


def _cases():
    for version in range(OLDEST_FORMAT, FORMAT_VERSION + 1):
        manifest = json.loads((CORPUS / f"format-{version}" / "MANIFEST.json").read_text())
        for name, entry in sorted(manifest["files"].items()):
            marks = []
            if version == 1 and not GLIBC_X86_64:
                marks.append(pytest.mark.skip(reason="format 1 decodes where glibc's exp/log/tanh run (x86-64)"))
            yield pytest.param(version, name, entry, id=f"format-{version}/{name}", marks=marks)


def test_every_format_has_a_corpus():
    """A new format version comes with its corpus (``python tests/corpus/make.py``)."""
    for version in range(OLDEST_FORMAT, FORMAT_VERSION + 1):
        manifest = json.loads((CORPUS / f"format-{version}" / "MANIFEST.json").read_text())
        assert manifest["format"] == version
        assert len(manifest["files"]) >= 4
        assert set(manifest["files"]) == {p.name for p in (CORPUS / f"format-{version}").glob("*.sqd")}
        for name in manifest["files"]:
            head = (CORPUS / f"format-{version}" / name).read_bytes()[:10]
            assert int.from_bytes(head[8:10], "little") == version, name


@pytest.mark.parametrize("version, name, entry", list(_cases()))
def test_corpus_file_decodes_bit_exactly(version, name, entry):
    out = decompress((CORPUS / f"format-{version}" / name).read_bytes())
    assert len(out) == entry["bytes"]
    assert hashlib.sha256(out).hexdigest() == entry["sha256"]


FILES = sorted(str(p) for p in CORPUS.glob("format-*/*.sqd"))
TESTED_BY_THE_COMMAND = Early("corpus through the command line", "-m", "seqd", "decompress", "-t", "-v", *FILES,
                              timeout=900)


@pytest.mark.skipif(not GLIBC_X86_64, reason="format 1 decodes where glibc's exp/log/tanh run (x86-64)")
@pytest.mark.early(TESTED_BY_THE_COMMAND)
def test_the_command_line_tests_and_lists_old_and_new_files():
    proc = TESTED_BY_THE_COMMAND.result()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count(": OK") == len(FILES)
    listing = subprocess.run([sys.executable, "-m", "seqd", "decompress", "-l", "--json", *FILES],
                             capture_output=True, text=True, timeout=300)
    models = {(Path(f["input"]).parent.name, f["model"]) for f in json.loads(listing.stdout)["files"]}
    assert ("format-1", "bytes-1") in models and ("format-2", "bytes-2") in models
    for face in FACES:  # each byte model's newest preset has frozen files, today's default's first
        assert (f"format-{face.writes}", face.versions.preset) in models, face.model
    assert ("format-4", "bitwise-1") in models and DEFAULT.writes == FORMAT_VERSION
