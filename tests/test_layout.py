"""The package layout holds: the packages' layer order (every import points down it), no
import cycle among livecam and ui modules (type-only imports under ``if TYPE_CHECKING:``
included), small folders, and no Qt outside ui/.

The import graph is read from the sources with ``ast`` (nothing is imported). An edge
goes from a module to each livecam/ui module it imports: ``import a.b``, ``from a.b import
c`` (to ``a.b.c`` when that is a module, else to ``a.b``) and relative imports. Imports at
module level (``if TYPE_CHECKING:`` blocks included) make the graph that must be acyclic;
imports inside functions are deferred on purpose and are checked separately: they may
not close a cycle either, except the CLI's entry points that start the panel or the
preview window (``livecam.cli`` -> ``ui``).

The packages are layered (``LAYERS``, lowest first): a module imports only from its own
package and from packages of a lower layer, at module level, under ``TYPE_CHECKING`` or
inside a function alike; two packages of one layer (sources and sinks, cli and benchmark)
may not import each other both ways. The one exception: the CLI's entry points start the
panel or the preview window (``livecam.cli`` -> ``ui``, inside a function).

Run as a script (``python tests/test_layout.py``) it prints the graph's cycles, the package
pairs that import each other, the imports that point up the order, the number of modules
``livecam.stream.output`` loads, and the folder sizes.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("livecam", "ui")
MAX_ROOT_MODULES = 6  # livecam/: __init__, __main__, app, types, errors, userfiles
MAX_FOLDER_MODULES = 12
QT = ("PySide6", "shiboken6", "PyQt5", "PyQt6")
#: modules allowed to import ui lazily (inside a function): the commands that open it
UI_LAUNCHERS = ("livecam.cli.",)
#: the packages' layers, lowest first: each imports only from its own and lower layers
LAYERS = (
    ("errors",),
    ("types",),
    ("userfiles",),
    ("models",),
    ("config",),
    ("runtime",),
    ("face",),
    ("remote",),  # the swapper's model call on a Triton server (client and `livecam serve`)
    ("sources", "sinks"),
    ("telemetry",),
    ("stream",),
    ("control",),
    ("obs",),  # the link to OBS Studio: reads telemetry, runs beside the stream
    ("app",),
    ("cli", "benchmark"),
    ("ui",),
)
#: the most modules (itself included) that loading the output thread's module may load:
#: it moves frames to sinks and needs neither the face pipeline nor the config tree
OUTPUT_CLOSURE_MAX = 16


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (livecam/ui ones resolved to a module of the tree)
    line: int
    deferred: bool  # inside a function (not run at import time)


def module_files() -> dict[str, Path]:
    """Every module of livecam and ui by dotted name (packages by their ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """``name`` or the longest prefix of it that is a module of the tree."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.depth = 0  # function nesting
        self.found: list[Import] = []
        self.external: list[tuple[str, int, bool]] = []  # (top-level name, line, deferred)

    def _add(self, name: str, line: int) -> None:
        top = name.partition(".")[0]
        if top not in PACKAGES:
            self.external.append((top, line, self.depth > 0))
            return
        target = _resolve(name, self.modules)
        if target is not None and target != self.module:
            self.found.append(Import(self.module, target, line, self.depth > 0))

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802 - ast API
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802 - ast API
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        for alias in node.names:  # ``from pkg import submodule`` imports the submodule
            full = f"{prefix}.{alias.name}"
            self._add(full if full in self.modules else prefix, node.lineno)


def scan() -> tuple[list[Import], list[tuple[str, str, int, bool]]]:
    """(imports between livecam/ui modules, imports of anything else as (module, top-level
    name, line, deferred))."""
    modules = module_files()
    internal: list[Import] = []
    external: list[tuple[str, str, int, bool]] = []
    for name, path in modules.items():
        visitor = _Visitor(name, path.name == "__init__.py", modules)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        internal += visitor.found
        external += [(name, top, line, deferred) for top, line, deferred in visitor.external]
    return internal, external


def cycles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components with more than one module (each a cycle or a
    knot of cycles), as sorted module lists (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def describe(component: list[str], imports: list[Import]) -> str:
    """The edges inside one component, one per line (``a:12 -> b``)."""
    inside = set(component)
    edges = {i for i in imports if i.source in inside and i.target in inside}
    return "\n".join(
        f"  {i.source}:{i.line} -> {i.target}{' (in a function)' if i.deferred else ''}"
        for i in sorted(edges, key=lambda i: (i.source, i.line, i.target))
    )


def folder_sizes() -> Iterator[tuple[Path, int]]:
    """(folder, its number of modules, ``__init__`` included) for every folder of
    livecam and ui holding modules."""
    for package in PACKAGES:
        for folder in sorted({p.parent for p in (ROOT / package).rglob("*.py")}):
            yield folder.relative_to(ROOT), len(list(folder.glob("*.py")))


def _launches_ui(imp: Import) -> bool:
    return imp.deferred and imp.source.startswith(UI_LAUNCHERS) and imp.target.startswith("ui")


def package_of(module: str) -> str:
    """The layered package of ``module``: ``ui`` for ui's modules, else the part of livecam
    after ``livecam.`` (``livecam.face.detect.yunet`` -> ``face``, ``livecam.app`` -> ``app``;
    ``livecam.__main__`` is the CLI's entry point, ``livecam`` itself holds the version)."""
    parts = module.split(".")
    if parts[0] == "ui":
        return "ui"
    if len(parts) == 1:
        return "errors"  # livecam/__init__.py: the version string, importable from anywhere
    return "cli" if parts[1] == "__main__" else parts[1]


def layer_of(package: str) -> int:
    for i, names in enumerate(LAYERS):
        if package in names:
            return i
    raise AssertionError(f"package {package!r} has no layer: add it to LAYERS")


def cross_package(imports: list[Import]) -> list[Import]:
    """The imports from one layered package into another, the CLI's launches of ui left out."""
    return [
        i for i in imports if package_of(i.source) != package_of(i.target) and not _launches_ui(i)
    ]


def upward(imports: list[Import]) -> list[Import]:
    """The imports that point up the layer order."""
    return [
        i
        for i in cross_package(imports)
        if layer_of(package_of(i.target)) > layer_of(package_of(i.source))
    ]


def mutual_pairs(imports: list[Import]) -> dict[tuple[str, str], list[Import]]:
    """Package pairs that import each other (either way, in any import), with the imports."""
    edges: dict[tuple[str, str], list[Import]] = {}
    for i in cross_package(imports):
        edges.setdefault((package_of(i.source), package_of(i.target)), []).append(i)
    return {
        (a, b): found + edges[(b, a)]
        for (a, b), found in edges.items()
        if a < b and (b, a) in edges
    }


def closure(module: str, imports: list[Import]) -> set[str]:
    """``module`` and every livecam/ui module it loads, directly or not (any import)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.source, set()).add(imp.target)
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


def _lines(imports: list[Import]) -> str:
    return "\n".join(
        f"  {i.source}:{i.line} -> {i.target}{' (in a function)' if i.deferred else ''}"
        for i in sorted(imports, key=lambda i: (i.source, i.line, i.target))
    )


def test_every_import_points_down_the_layers() -> None:
    imports, _ = scan()
    found = upward(imports)
    order = " < ".join("/".join(names) for names in LAYERS)
    assert not found, f"imports that point up the layer order ({order}):\n" + _lines(found)


def test_no_two_packages_import_each_other() -> None:
    imports, _ = scan()
    pairs = mutual_pairs(imports)
    assert not pairs, "packages that import each other:\n" + "\n".join(
        f"{a} <-> {b}:\n{_lines(found)}" for (a, b), found in sorted(pairs.items())
    )


def test_every_package_has_a_layer() -> None:
    modules = module_files()
    missing = sorted({package_of(m) for m in modules} - {p for names in LAYERS for p in names})
    assert not missing, f"packages without a layer (add them to LAYERS): {missing}"


def test_the_output_thread_loads_few_modules() -> None:
    imports, _ = scan()
    loaded = closure("livecam.stream.output", imports)
    assert len(loaded) <= OUTPUT_CLOSURE_MAX, (
        f"livecam.stream.output loads {len(loaded)} modules (at most {OUTPUT_CLOSURE_MAX}): "
        + ", ".join(sorted(loaded))
    )


def test_the_layer_checks_see_an_upward_and_a_mutual_import() -> None:
    """A deferred import of a higher layer is upward; an import each way between two
    packages of one layer is a mutual pair; the CLI launching ui is neither."""
    edges = [
        Import("livecam.config.schema", "livecam.control.keycombo", 3, True),
        Import("livecam.sources.image", "livecam.sinks.base", 1, False),
        Import("livecam.sinks.preview", "livecam.sources.base", 9, True),
        Import("livecam.cli.main", "ui.panel_app", 5, True),
        Import("livecam.face.parts", "livecam.types", 2, False),
    ]
    assert [(i.source, i.target) for i in upward(edges)] == [
        ("livecam.config.schema", "livecam.control.keycombo")
    ]
    assert list(mutual_pairs(edges)) == [("sinks", "sources")]
    assert closure("livecam.face.parts", edges) == {"livecam.face.parts", "livecam.types"}


def test_no_import_cycle_at_module_level() -> None:
    imports, _ = scan()
    found = cycles([i for i in imports if not i.deferred])
    assert not found, "import cycles (module level, type-only included):\n" + "\n".join(
        describe(c, imports) for c in found
    )


def test_no_import_cycle_through_deferred_imports() -> None:
    """Imports inside functions may not close a cycle either (only the CLI's launchers
    of the panel and the preview window reach into ui)."""
    imports, _ = scan()
    kept = [i for i in imports if not _launches_ui(i)]
    found = cycles(kept)
    assert not found, "import cycles (imports in functions included):\n" + "\n".join(
        describe(c, kept) for c in found
    )


def test_no_qt_or_ui_in_livecam() -> None:
    internal, external = scan()
    qt = [f"{m}:{line}" for m, top, line, _ in external if m.startswith("livecam") and top in QT]
    assert not qt, f"livecam imports Qt (only ui/ may): {qt}"
    ui = [
        f"{i.source}:{i.line} -> {i.target}"
        for i in internal
        if i.source.startswith("livecam") and i.target.startswith("ui") and not _launches_ui(i)
    ]
    assert not ui, f"livecam imports ui (only the CLI's launchers may, lazily): {ui}"


def test_folders_are_small() -> None:
    sizes = dict(folder_sizes())
    assert sizes[Path("livecam")] <= MAX_ROOT_MODULES, sorted(
        p.name for p in (ROOT / "livecam").glob("*.py")
    )
    big = {str(f): n for f, n in sizes.items() if n > MAX_FOLDER_MODULES}
    assert not big, f"folders with more than {MAX_FOLDER_MODULES} modules: {big}"


def test_the_scan_sees_type_only_and_relative_imports(tmp_path: Path) -> None:
    """The visitor finds an import under ``if TYPE_CHECKING:``, a relative one and a
    deferred one, and the cycle finder reports a two-module cycle."""
    modules = {"livecam": tmp_path, "livecam.a": tmp_path, "livecam.b": tmp_path}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from livecam.b import Thing\n"
        "from . import b\n"
        "def f():\n    import livecam.b\n"
    )
    visitor = _Visitor("livecam.a", False, modules)
    visitor.visit(ast.parse(source))
    assert [(i.target, i.line, i.deferred) for i in visitor.found] == [
        ("livecam.b", 3, False),
        ("livecam.b", 4, False),
        ("livecam.b", 6, True),
    ]
    edges = [Import("livecam.a", "livecam.b", 3, False), Import("livecam.b", "livecam.a", 1, False)]
    assert cycles(edges) == [["livecam.a", "livecam.b"]]
    assert cycles(edges[:1]) == []


if __name__ == "__main__":
    all_imports, _ = scan()
    pairs = mutual_pairs(all_imports)
    print(f"{len(pairs)} package pair(s) importing each other")
    for (a, b), found in sorted(pairs.items()):
        print(f"{a} <-> {b}:\n{_lines(found)}")
    ups = upward(all_imports)
    print(f"{len(ups)} import(s) pointing up the layer order")
    if ups:
        print(_lines(ups))
    print(
        f"livecam.stream.output loads {len(closure('livecam.stream.output', all_imports))} modules"
    )
    for deferred in (False, True):
        kept = [i for i in all_imports if (deferred or not i.deferred) and not _launches_ui(i)]
        knots = cycles(kept)
        what = "with imports in functions" if deferred else "module level"
        print(f"{len(knots)} import cycle(s), {what}")
        for knot in knots:
            print(describe(knot, kept))
    for folder, n in folder_sizes():
        print(f"{n:3d} {folder}")
