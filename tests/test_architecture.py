"""The house rules of ``docs/architecture.md``, checked on the source: the arrows between rooms, and room sizes.

Imports are read with :mod:`ast` (nothing is imported), including those
inside functions and under ``TYPE_CHECKING``, and resolved to ``seqd.*``
module names:

* ``seqd.core`` imports nothing of seqd outside itself: the mathematics can be
  read, tested and reused without a socket, a thread or a command line;
* ``seqd.clients`` imports nothing of seqd outside itself: a client needs no
  model and no daemon;
* ``seqd.daemon`` may use ``core``, ``clients`` and the package's version, never
  the command line;
* nothing imports ``seqd.cli`` but the package's ``__main__``: the command line
  is the top floor;
* no source file of ``core/``, ``daemon/``, ``clients/`` or ``cli/`` exceeds
  :data:`MAX_LINES` lines;
* no kernel of a byte model, of what they share or of the shared network
  kernels (``core/online``, ``core/bits``, ``core/kit``, ``core/kernels``)
  takes more than :data:`MAX_KERNEL_PARAMETERS` parameters: a kernel reads
  the learner's state through the named tuples of its parts
  (``docs/architecture.md``), not array by array;
* no two modules import each other, directly or in a circle;
* neither byte model imports the other's modules: what they share lives in
  ``core/kit``, and the rest of seqd meets them through their faces
  (``core/faces.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("core", "daemon", "clients", "cli")
MAX_LINES = 500
MAX_KERNEL_PARAMETERS = 8
KERNEL_ROOMS = ("core/online", "core/bits", "core/kit", "core/kernels")
BYTE_MODELS = ("seqd.core.online", "seqd.core.bits")

# room -> the rooms (seqd.<room>) its files may import; "" is the root package (seqd itself: its version)
ALLOWED = {
    "core": {"core"},
    "clients": {"clients"},
    "daemon": {"daemon", "core", "clients", ""},
    "cli": {"cli", "daemon", "core", "clients", ""},
    "": {"", "clients", "cli"},
}


def sources() -> list[Path]:
    files = [p for room in ROOMS for p in sorted((ROOT / room).rglob("*.py"))]
    return files + [ROOT / "__init__.py", ROOT / "__main__.py"]


def module_name(path: Path) -> str:
    """The dotted name of a source file: ``core/online/state.py`` is ``seqd.core.online.state``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["seqd", *parts])


def imported(path: Path):
    """(module, names) of each import in ``path``, relative imports resolved: ``import m`` gives (m, ()),
    ``from p import a, b`` gives (p, (a, b))."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                target = ".".join(base[:len(base) - (node.level - 1)] + ([node.module] if node.module else []))
            yield target, tuple(alias.name for alias in node.names if alias.name != "*")


def seqd_imports(path: Path) -> set[str]:
    """Every ``seqd.*`` module ``path`` imports, relative imports resolved."""
    found = set()
    for target, names in imported(path):
        found.add(target)
        # ``from . import clients``: the names may be modules themselves
        found.update(f"{target}.{n}" for n in names)
    return {m for m in found if m == "seqd" or m.startswith("seqd.")}


def room(module: str) -> str:
    """``core`` for ``seqd.core.online``; ``""`` for ``seqd`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else ""


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_only_down(path):
    own = room(module_name(path))
    wrong = sorted(m for m in seqd_imports(path) if room(m) not in ALLOWED[own])
    assert not wrong, f"{path.relative_to(ROOT)} ({own or 'the seqd package'}) imports {wrong}: see docs/architecture.md"


def test_only_the_entry_points_import_the_command_line():
    importers = sorted(str(p.relative_to(ROOT)) for p in sources()
                       if room(module_name(p)) != "cli" and any(room(m) == "cli" for m in seqd_imports(p)))
    assert importers == ["__main__.py"]


@pytest.mark.parametrize("path", [p for p in sources() if p.parent != ROOT], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_source_file_is_over_the_size_limit(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it along an idea (limit {MAX_LINES})"


def kernels(path: Path) -> list[tuple[str, int]]:
    """(name, number of parameters) of every function of ``path`` compiled by ``jit.kernel`` or
    ``jit.inline_kernel``."""
    return [(node.name, len(node.args.args)) for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.FunctionDef)
            and any(getattr(d, "id", None) in ("kernel", "inline_kernel") for d in node.decorator_list)]


@pytest.mark.parametrize("path", [p for room in KERNEL_ROOMS for p in sorted((ROOT / room).rglob("*.py"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_kernel_of_the_byte_model_takes_more_than_eight_parameters(path):
    wide = [(name, n) for name, n in kernels(path) if n > MAX_KERNEL_PARAMETERS]
    assert not wide, f"{path.relative_to(ROOT)}: {wide}: group the arrays into a part's named tuple (limit " \
        f"{MAX_KERNEL_PARAMETERS})"


def module_imports(path: Path, modules: set) -> set[str]:
    """The modules among ``modules`` that ``path`` imports: ``from p import m`` of a module m names m alone (p,
    a package being imported already, is not run again), of any other name p."""
    found = set()
    for target, names in imported(path):
        if not names:
            found.add(target)
        for n in names:
            found.add(f"{target}.{n}" if f"{target}.{n}" in modules else target)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in sources()}
    return {m: module_imports(p, set(files)) - {m} for m, p in files.items()}


def test_no_import_circles():
    graph = import_graph()
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"modules that import each other, in a circle: {circles}"


def test_neither_byte_model_imports_the_other():
    for path in sources():
        own = next((m for m in BYTE_MODELS if module_name(path).startswith(m + ".") or module_name(path) == m), None)
        if own is None:
            continue
        other = [m for m in seqd_imports(path) for b in BYTE_MODELS if b != own and (m == b or m.startswith(b + "."))]
        assert not other, f"{path.relative_to(ROOT)} imports {other}: what byte models share belongs in core/kit"


def test_the_rules_see_the_imports():
    """The resolver itself: relative imports from a package and from a module, and absolute ones."""
    assert seqd_imports(ROOT / "core" / "online" / "window.py") >= {"seqd.core.jit", "seqd.core.kernels.backward",
                                                                   "seqd.core.online.config"}
    assert "seqd.clients.protocol" in seqd_imports(ROOT / "daemon" / "requests.py")
    assert "seqd.clients" in seqd_imports(ROOT / "__init__.py")
    assert seqd_imports(ROOT / "clients" / "__init__.py") >= {"seqd.clients.client", "seqd.clients.aio"}
    assert "seqd.cli" in seqd_imports(ROOT / "__main__.py")
    assert ("learn_step", 4) in kernels(ROOT / "core" / "online" / "steps.py")  # the parameter count sees kernels


def test_every_package_of_the_house_is_installed():
    """pyproject.toml lists its packages one by one: a new subpackage left out of the list works from a checkout
    (an editable install) and is missing from a wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"seqd"} | {".".join(("seqd",) + init.parent.relative_to(ROOT).parts)
                        for room in ROOMS for init in (ROOT / room).rglob("__init__.py")}
    assert found - listed == set(), "packages missing from pyproject.toml's [tool.setuptools] packages"
