"""Every public signature carries type hints, and the mypy configuration stays meaningful.

The walk covers ``fastpu.__all__`` and the ``__all__`` of every public module (a module named
in ``fastpu.__all__``, and ``fastpu.model``): each function, each class, and each public method, property,
classmethod and staticmethod defined in those classes. A public function added later without
hints fails here, before mypy (which lets unannotated private helpers through in the relaxed
modules) could miss it.
"""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent


def _public_modules():
    import fastpu.model

    mods = {"fastpu": fastpu, "fastpu.model": fastpu.model}
    for name in fastpu.__all__:
        obj = getattr(fastpu, name)
        if isinstance(obj, types.ModuleType):
            mods[f"fastpu.{name}"] = obj      # the public path (fastpu.split is model_selection.split)
    return mods


def _public_objects():
    """(qualified name, object) for every public function, class and class member."""
    seen = {}
    for modname, mod in _public_modules().items():
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType):
                continue
            if inspect.isclass(obj):
                seen.setdefault(id(obj), (f"{modname}.{name}", obj))
                for member, kind, owner, value in inspect.classify_class_attrs(obj):
                    if owner is not obj or member.startswith("_"):
                        continue
                    qual = f"{modname}.{name}.{member}"
                    if kind == "property":
                        seen.setdefault(id(value), (qual, value.fget))
                    elif kind in ("method", "class method", "static method"):
                        func = getattr(value, "__func__", value)
                        if inspect.isfunction(func):
                            seen.setdefault(id(func), (qual, func))
            elif callable(obj):
                seen.setdefault(id(obj), (f"{modname}.{name}", obj))
    return sorted(seen.values(), key=lambda t: t[0])


def _missing(func):
    """The parameter names (and 'return') of ``func`` that carry no annotation."""
    func = inspect.unwrap(func)
    if not inspect.isfunction(func):
        return []
    sig = inspect.signature(func, eval_str=False)
    params = list(sig.parameters.values())
    missing = [p.name for i, p in enumerate(params)
               if p.annotation is inspect.Parameter.empty
               and not (i == 0 and p.name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


PUBLIC = _public_objects()


def test_the_walk_finds_the_public_api():
    names = {q for q, _ in PUBLIC}
    # a broken walk (an empty or tiny list) must not pass silently
    for expected in ("fastpu.ocmf.fit", "fastpu.fbgd.fit", "fastpu.csrr.fit", "fastpu.homf.fit",
                     "fastpu.recommend", "fastpu.Factorization", "fastpu.evaluate",
                     "fastpu.split.holdout", "fastpu.select.search",
                     "fastpu.datasets.Dataset"):
        assert expected in names, expected
    assert len(PUBLIC) > 60


@pytest.mark.parametrize("qualname, obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_public_signature_is_annotated(qualname, obj):
    if inspect.isclass(obj):
        # a class is checked through its constructor (dataclass fields are its annotations)
        init = obj.__dict__.get("__init__")
        if init is None:
            return
        obj = init
    assert not _missing(obj), f"{qualname} lacks type hints for {_missing(obj)}"


def test_missing_detects_an_unannotated_function():
    def bare(a, b: int = 1):
        return a

    def full(a: int, *, b: str = "") -> int:
        return a

    class C:
        def method(self, x: int) -> None:
            pass

    assert _missing(bare) == ["a", "return"]
    assert _missing(full) == []
    assert _missing(C.method) == []


def _overrides():
    text = (ROOT / "pyproject.toml").read_text()
    blocks = text.split("[[tool.mypy.overrides]]")[1:]
    out = []
    for block in blocks:
        block = block.split("\n[", 1)[0] if "\n[tool" in block else block
        mods = re.findall(r'"([\w.*]+)"', re.search(r"module = \[(.*?)\]", block, re.S).group(1))
        out.append((mods, block))
    return out


def test_mypy_override_lists_name_real_modules_once():
    pkg = ROOT / "fastpu"
    listed = []
    for mods, _ in _overrides():
        for mod in mods:
            if not mod.startswith("fastpu"):
                continue
            listed.append(mod)
            rel = mod.removesuffix(".*").split(".")[1:]
            path = pkg.joinpath(*rel)
            # a module not on this branch yet (added by another branch) may be listed only
            # if its package or file exists or it is a planned sub-package named below
            assert (path.with_suffix(".py").exists() or (path / "__init__.py").exists()
                    or mod in PLANNED), f"mypy override names {mod}, which does not exist"
    assert len(listed) == len(set(listed)), "a module is listed in two mypy overrides"


#: modules other branches add; listing them early keeps the merge from breaking mypy
PLANNED: set[str] = set()


def test_mypy_config_is_strict_and_ignore_errors_is_the_exception():
    text = (ROOT / "pyproject.toml").read_text()
    main = text.split("[tool.mypy]", 1)[1].split("[[tool.mypy.overrides]]", 1)[0]
    for flag in ("disallow_untyped_defs", "disallow_incomplete_defs", "check_untyped_defs"):
        assert re.search(rf"^{flag} = true$", main, re.M), flag
    assert 'files = ["fastpu"]' in main
    ignored = [m for mods, block in _overrides() if "ignore_errors = true" in block for m in mods]
    public = {m.__name__ for m in _public_modules().values()}
    # the public API modules are type-checked (bodies included), never skipped
    assert not public & set(ignored), public & set(ignored)


def test_csrr_model_without_sparse_part_names_it():
    # the type check made CSRRModel narrow its optional V: a model built without it now says
    # what is missing instead of failing with an AttributeError on None
    import numpy as np

    from fastpu.csrr import CSRRModel

    model = CSRRModel(np.ones((3, 2)), np.ones((4, 2)), method="csrr", variant="e")
    with pytest.raises(ValueError, match=r"no sparse part \(V is None\)"):
        model.shape
    with pytest.raises(ValueError, match=r"no sparse part \(V is None\)"):
        model.scores([0])


#: the only modules allowed unannotated private helpers (the method modules other branches are
#: still changing); everything else in fastpu is checked strictly. Shrink this set as helpers
#: get hints; growing it should be a deliberate decision, hence this test.
RELAXED = {"fastpu.csrr._solvers", "fastpu.fbgd._problem", "fastpu.fbgd._tensor",
           "fastpu.model._fold_in", "fastpu.homf._walk", "fastpu.ocmf._problem",
           "fastpu.distributed", "fastpu.distributed.*", "fastpu.csrr._fit", "fastpu.fbgd._fit",
           "fastpu.homf._fit", "fastpu.ocmf._dask", "fastpu.ocmf._dask_tron", "fastpu.fbgd._dask",
           "fastpu.fbgd._dask_features", "fastpu.csrr._dask", "fastpu.homf._dask",
           "fastpu.ocmf._dask_blocks", "fastpu.fbgd._dask_blocks"}


def test_mypy_relaxed_modules_are_the_known_few():
    relaxed = [m for mods, block in _overrides() if "disallow_untyped_defs = false" in block
               for m in mods if not m.startswith("fastpu._kernels")]
    assert set(relaxed) <= RELAXED, set(relaxed) - RELAXED
    for mods, block in _overrides():
        if "disallow_untyped_defs = false" in block or "ignore_errors = true" in block:
            # relaxing never switches off the check of function bodies, except for the kernels
            # (numba checks those) and modules that are not on this branch yet
            if not set(mods) <= {"fastpu._kernels", "fastpu._kernels.*"}:
                assert "check_untyped_defs = false" not in block
                if "ignore_errors = true" in block:
                    assert set(mods) <= PLANNED, mods
