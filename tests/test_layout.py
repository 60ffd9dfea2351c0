"""The package's layout holds (docs/layout.md): few top-level entries, no import circle, private
parts private to their package, the methods listed once. ``lint-imports`` (CI) checks the layers.

The import graph here is read from the source with ``ast``: every ``import`` statement,
including those inside functions (an import made on first use is still a dependency).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "fastpu"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(importer: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".") if is_pkg else importer.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _walk_outside_type_checking(tree: ast.AST):
    """ast.walk, leaving out the bodies of ``if TYPE_CHECKING:`` (imports for type checkers only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _imports() -> dict[str, list[tuple[str, str | None]]]:
    """importer -> [(imported module, imported name or None)] for modules of fastpu."""
    out: dict[str, list[tuple[str, str | None]]] = {}
    for mod, path in MODULES.items():
        is_pkg = path.name == "__init__.py"
        found: list[tuple[str, str | None]] = []
        for node in _walk_outside_type_checking(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found += [(a.name, None) for a in node.names if a.name.startswith("fastpu")]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node)
                if not target.startswith("fastpu"):
                    continue
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    found.append((sub, None) if sub in MODULES else (target, a.name))
        out[mod] = found
    return out


IMPORTS = _imports()


def _owner(module: str) -> str:
    """The nearest module of fastpu that ``module`` names (a name inside it is not a module)."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module


def test_at_most_16_top_level_entries():
    """The public modules and packages, the two package files and the two private packages; the
    16th is compat (other libraries' interfaces), beside model_selection in the layers."""
    entries = sorted(p.name for p in PKG.iterdir() if p.name != "__pycache__")
    assert len(entries) <= 16, entries
    assert "compat" in entries


def test_no_import_circle():
    graph = {m: {_owner(t) for t, _ in deps} - {m, ""} for m, deps in IMPORTS.items()}
    # a module's parent packages are imported before it: an edge to a package's __init__ from
    # inside that package is not a circle of the code's making, so packages are left out as
    # targets of their own descendants
    for m in graph:
        graph[m] = {t for t in graph[m] if not m.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles = []

    def visit(v: str) -> None:        # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def _private_step(importer: str, target: str, name: str | None) -> str | None:
    """The private part of ``target`` (or of ``name`` in it) that ``importer`` reaches from outside
    the package that owns it, or None.

    A private module or subpackage (``fastpu.ocmf._problem``) belongs to the package that holds
    it (fastpu.ocmf); a private name in a module (``_prepare`` in fastpu.ocmf._problem) belongs to
    that module's package (fastpu.ocmf), a private name in a package's ``__init__`` to the package.
    The modules of a package may use what is private to it; no module outside it may.
    """
    parts = target.split(".")
    steps = [(".".join(parts[:i]), seg) for i, seg in enumerate(parts) if i > 0]
    if name:
        owner = target if MODULES.get(target, pathlib.Path()).name == "__init__.py" \
            else target.rpartition(".")[0]
        steps.append((owner, name))
    for owner, seg in steps:
        if seg.startswith("_") and not seg.startswith("__") and not (
                importer == owner or importer.startswith(owner + ".")):
            return f"{target}.{name}" if name else target
    return None


def test_private_parts_stay_in_their_package():
    bad = sorted({f"{m} -> {step}" for m, deps in IMPORTS.items() for t, n in deps
                  if (step := _private_step(m, t, n))})
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kind", ["method", "baseline"])
def test_the_methods_and_baselines_are_listed_once(kind):
    """Only the registry holds the methods (or the baselines) as one collection (a tuple, list,
    set or dict of two or more of their names); everything else reads it. A module's
    ``__all__`` lists its functions (``ease``, ``popularity``), not the baselines."""
    from fastpu._core import registry

    names = set(registry.names(kind))
    found = []
    for mod, path in MODULES.items():
        if mod == "fastpu._core.registry":
            continue
        tree = ast.parse(path.read_text())
        exports = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and [getattr(t, "id", None) for t in node.targets] == ["__all__"]}
        for node in ast.walk(tree):
            if id(node) in exports:
                continue
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or items is None:
                continue
            listed = {k.value for k in items if isinstance(k, ast.Constant) and k.value in names}
            if len(listed) >= 2:
                found.append(f"{mod}:{node.lineno} {sorted(listed)}")
    assert not found, found


def _private_attributes() -> list[str]:
    """``alias._name`` where ``alias`` is a module of fastpu imported by name (``from fastpu._core
    import validation as V``; ``import fastpu.x as y``) and ``_name`` is private to a package the
    importer is not in: the import is public, the attribute reached through it is not."""
    found = []
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        alias = {}
        for node in _walk_outside_type_checking(tree):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(mod, path.name == "__init__.py", node)
                for a in node.names:
                    if f"{target}.{a.name}" in MODULES:
                        alias[a.asname or a.name] = f"{target}.{a.name}"
            elif isinstance(node, ast.Import):
                alias.update({a.asname: a.name for a in node.names
                              if a.asname and a.name in MODULES})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in alias):
                step = _private_step(mod, alias[node.value.id], node.attr)
                if step:
                    found.append(f"{mod}:{node.lineno} {node.value.id}.{node.attr} ({step})")
    return found


def test_private_names_stay_private_through_a_module_alias():
    assert _private_attributes() == []


@pytest.mark.parametrize("importer, target, name, expected", [
    ("fastpu.model._fold_in", "fastpu.ocmf._problem", "_sample", "fastpu.ocmf._problem._sample"),
    ("fastpu.model._fold_in", "fastpu.ocmf._problem", None, "fastpu.ocmf._problem"),
    ("fastpu.ocmf._fit", "fastpu.ocmf._problem", "_prepare", None),
    ("fastpu.ocmf._fit", "fastpu._core.validation", "check_csr", None),
    ("fastpu.ocmf._fit", "fastpu._core.threads", "_check", "fastpu._core.threads._check"),
    ("fastpu.cli._commands", "fastpu.cli._warmup", None, None),
    ("fastpu", "fastpu.optim._tron", None, "fastpu.optim._tron"),
])
def test_the_private_rule_itself(importer, target, name, expected):
    assert _private_step(importer, target, name) == expected


def test_numba_compiles_only_the_kernels_folder():
    """The kernel cache's key hashes the sources of ``fastpu/_kernels/`` (fastpu/_core/cache.py):
    that covers every helper a cached kernel can inline only while no other module defines
    compiled code. Any use of numba's compiling decorators elsewhere would escape the key."""
    compilers = {"njit", "jit", "vectorize", "guvectorize", "cfunc", "generated_jit", "stencil",
                 "overload", "register_jitable", "jitclass"}
    found = []
    for mod, path in MODULES.items():
        if mod.startswith("fastpu._kernels"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in compilers:
                name = node.attr
            elif isinstance(node, ast.Name) and node.id in compilers - {"overload"}:
                name = node.id                        # (typing.overload is a plain name)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("numba"):
                name = ",".join(a.name for a in node.names if a.name in compilers) or None
            if name:
                found.append(f"{mod}:{node.lineno} {name}")
    assert found == []
