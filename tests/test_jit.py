"""Compiled kernels are cached by a fingerprint of every core source, so stale machine code never runs."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from seqd.core import jit


def test_the_cache_folder_is_named_after_the_sources(tmp_path, monkeypatch):
    core = Path(jit.__file__).resolve().parent
    assert jit.CACHE_DIR == jit.cache_dir()
    assert jit.cache_dir().endswith("seqd-" + jit.source_fingerprint())
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert jit.cache_dir().startswith(str(tmp_path / "cache"))
    copy = tmp_path / "core"
    shutil.copytree(core, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert jit.source_fingerprint(copy) == jit.source_fingerprint(core)
    helper = copy / "online" / "sources.py"  # a module the kernels call, not a kernel's own file
    helper.write_text(helper.read_text() + "\n# edited\n")
    assert jit.source_fingerprint(copy) != jit.source_fingerprint(core)


def test_importing_the_kernels_leaves_numbas_configuration_alone(tmp_path):
    """seqd's cache directory is its kernels' own: other Numba code in the process keeps its settings."""
    script = ("import numba; before = numba.config.CACHE_DIR; "
              "import seqd.core.online, seqd.core.training.batch, seqd.core.container; "
              "print(repr(before), repr(numba.config.CACHE_DIR))")
    plain = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    for env in (plain, {**plain, "NUMBA_CACHE_DIR": str(tmp_path)}):
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        assert len(out) == 2 and out[0] == out[1], out


def test_kernels_are_cached_in_the_fingerprinted_folder():
    from seqd.core.online.steps import learn_buffer

    assert isinstance(learn_buffer._cache, jit.SeqdCache)
    assert learn_buffer._cache.cache_path.startswith(jit.CACHE_DIR)


def test_a_kernel_cannot_allocate():
    """Kernels are compiled without reference counting (``jit`` module docstring), so one that would create an
    array does not compile at all: the arrays a kernel uses come from its caller.  That the compiled kernels
    count no references is checked on the coding path's machine code (``test_numerics_ir``)."""

    def allocates(n):
        return np.zeros(n).sum()

    def fills(out):
        for i in range(out.shape[0]):
            out[i] = i

    out = np.zeros(3)
    numba.jit(**jit.FLAGS)(fills)(out)  # the flags every kernel gets, without the on-disk cache
    assert out.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(numba.core.errors.NumbaError):
        numba.jit(**jit.FLAGS)(allocates)(3)
