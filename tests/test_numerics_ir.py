"""The coding path's machine code calls no C library function and fuses no multiply-add.

A ``.sqd`` file decodes only where the decoder repeats its encoder's
arithmetic bit for bit (``docs/format.md``).  ``core/kernels/elementary.py``
makes that hold by construction; this test checks the construction on what
Numba actually compiled: it compresses and decompresses in a fresh process
(with an empty kernel cache, since Numba keeps the IR of fresh compiles
only; ``early.py`` starts it beside the session), then reads the LLVM IR
and the assembly of every kernel of ``seqd.core`` that the round trip
compiled.  It fails on

* any external function the IR declares other than Python's and Numba's
  runtime helpers and ``sqrt`` (IEEE 754 rounds it correctly; it compiles to
  one instruction): ``exp``, ``log``, ``tanh``, ``pow``, SVML vector functions...;
* any floating-point LLVM intrinsic other than sqrt, fabs, copysign and the
  vector loads and stores (``llvm.masked.gather`` ...): ``llvm.exp.*``,
  ``llvm.log.*``, ``llvm.fma.*``, ``llvm.fmuladd.*``, ``llvm.vector.reduce.fadd``...;
* any fused multiply-add instruction in the assembly (``vfmadd...``);
* any reference counting (``NRT_incref``, ``NRT_decref``): kernels are compiled
  without it (``core/jit.py``), which is a speed matter, not one of bits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from early import Early

ROUND_TRIP = r"""
from seqd.core.container import compress, decompress

data = b"".join(b"%d GET /item/%d 200 %dms\n" % (i, i * 31 % 977, i * 7 % 113) for i in range(400))
assert decompress(compress(data)) == data  # the default byte model (bitwise), its tables growing
from seqd.core.online import OnlineConfig
assert decompress(compress(data, OnlineConfig.bytes_default(context_bits=10, history_bits=10, match_bits=10))) == data
"""
# what the probe compiles (WORK), then the IR and assembly of every kernel of seqd.core that it compiled
SCAN = r"""
import importlib, json, pkgutil, re
from numba.core.dispatcher import Dispatcher
import seqd.core
WORK
RUNTIME = re.compile(r"(Py|_Py|NRT_|numba_(do_raise|gil_ensure|gil_release|runtime_build_excinfo_struct|unpickle|adapt_ndarray)$)")
ALLOWED_INTRINSICS = re.compile(r"llvm\.(sqrt|fabs|copysign|masked\.(gather|scatter|load|store))\.")
FLOAT_TYPES = re.compile(r"\.(v\d+)?(f16|f32|f64|f80|f128)\b")
FMA = re.compile(r"\bv?f(n)?m(add|sub)(\d{3}|sub|add)")
report = {"kernels": [], "problems": []}
seen = set()
for info in pkgutil.walk_packages(seqd.core.__path__, "seqd.core."):
    module = importlib.import_module(info.name)
    for name, obj in vars(module).items():
        if not isinstance(obj, Dispatcher) or id(obj) in seen or not obj.signatures:
            continue
        seen.add(id(obj))
        where = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
        report["kernels"].append(where)
        for sig in obj.signatures:
            ir = obj.inspect_llvm(sig)
            for callee in set(re.findall(r'declare [^@]*@"?([\w.$]+)', ir)):
                if callee.startswith("llvm."):
                    if FLOAT_TYPES.search(callee) and not ALLOWED_INTRINSICS.match(callee):
                        report["problems"].append(f"{where}: intrinsic {callee}")
                elif not (RUNTIME.match(callee) or callee.startswith("_ZN") or callee == "sqrt"):
                    report["problems"].append(f"{where}: calls {callee}")
            if "NRT_incref" in ir or "NRT_decref" in ir:  # reference counting is off (core/jit.py)
                report["problems"].append(f"{where}: counts references")
            for instruction in set(m.group(0) for m in FMA.finditer(obj.inspect_asm(sig))):
                report["problems"].append(f"{where}: {instruction}")
print(json.dumps(report))
"""
PROBE = SCAN.replace("WORK", ROUND_TRIP)
COLD_ROUND_TRIP = Early("coding path IR", "-c", PROBE,
                        env={"NUMBA_CACHE_DIR": "{folder}/empty-cache", "NUMBA_DISABLE_JIT": None})


@pytest.mark.early(COLD_ROUND_TRIP)
def test_coding_path_uses_only_basic_ieee_operations():
    proc = COLD_ROUND_TRIP.result()
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    kernels = set(report["kernels"])
    # the coding path itself was compiled and read, not only helpers
    for needed in ("seqd.core.online.codec.encode_symbols", "seqd.core.online.codec.decode_symbols",
                   "seqd.core.online.steps.learn_step", "seqd.core.online.sources.activities",
                   "seqd.core.online.mixer.vote", "seqd.core.online.mixer.context_writing_update",
                   "seqd.core.kernels.forward.softmax_offset_into", "seqd.core.online.window.window_update",
                   "seqd.core.bits.codec.encode_bytes", "seqd.core.bits.codec.decode_bytes"):
        assert needed in kernels, f"{needed} was not compiled by the round trip: {sorted(kernels)}"
    assert report["problems"] == [], "\n".join(sorted(set(report["problems"])))


def test_the_probe_sees_a_libm_call(tmp_path):
    """The check is not vacuous: format 1's numerics (the C library's exp/log/tanh) are caught, here in the
    batch forward pass (softmax, activation, log-likelihood) compiled for them."""
    probe = SCAN.replace("WORK", (  # (only this kernel compiled: the round trip is the test above's)
        "import numpy as np\n"
        "from seqd.core.kernels.elementary import numerics_marker\n"
        "from seqd.core.kernels.forward import allocate, forward\n"
        "from seqd.core.kernels.network import Network\n"
        "net = Network(np.array([[0, 0], [0, 1]]), np.full((2, 2, 2), 0.1), np.zeros((0, 0)), 1.0, True, 0,\n"
        "              numerics_marker('libm'))\n"
        "V, a, pi = allocate(3, 1, 2)\n"
        "forward(net, np.array([0, 1, 1]), np.ones(3), np.zeros((2, 2)), np.zeros(2), V, a, pi)"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty-cache")}
    env.pop("NUMBA_DISABLE_JIT", None)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    problems = " ".join(json.loads(proc.stdout.strip().splitlines()[-1])["problems"])
    assert "exp" in problems and "log" in problems and "tanh" in problems, problems
