"""Compiled kernels are cached by a fingerprint of every core source, so stale machine code never runs."""

import shutil
from pathlib import Path

import numba

from seqd.core import jit


def test_the_cache_folder_is_named_after_the_sources(tmp_path, monkeypatch):
    core = Path(jit.__file__).resolve().parent
    assert numba.config.CACHE_DIR == jit.cache_dir()
    assert jit.cache_dir().endswith("seqd-" + jit.source_fingerprint())
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert jit.cache_dir().startswith(str(tmp_path / "cache"))
    copy = tmp_path / "core"
    shutil.copytree(core, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert jit.source_fingerprint(copy) == jit.source_fingerprint(core)
    helper = copy / "online" / "context.py"  # a module the kernels call, not a kernel's own file
    helper.write_text(helper.read_text() + "\n# edited\n")
    assert jit.source_fingerprint(copy) != jit.source_fingerprint(core)
