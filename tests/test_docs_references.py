"""What the documentation names exists: every ``fastpu.x.y`` resolves to a module or attribute,
every path (``fastpu/...py``, ``benchmarks/...``, ``docs/...``, ``tests/...``) to a file or
folder; and every benchmark report is listed, stamped and marked as the index says.

The pages are README.md and docs/ (the benchmark reports and result tables included); the
docstrings and comments are those of fastpu/, benchmarks/ and tests/. Markdown link targets are
left to Sphinx, which fails on a missing page, image or cross-reference (docs/conf.py:
``nitpicky``). A pattern (``docs/results/<name>.md``, ``fastpu.partial_fit_{side}s``) is
checked up to its first placeholder.
"""

import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SOURCES = [p for folder in ("fastpu", "benchmarks", "tests") for p in sorted((ROOT / folder).rglob("*.py"))
           if p != pathlib.Path(__file__).resolve()]        # this file names stale names on purpose
PACKAGES = "_core|_kernels|ocmf|fbgd|csrr|homf|model|model_selection|optim|distributed|datasets|cli|compat"
REF = re.compile(r"(?<![\w/.:\-])(fastpu[./][\w./]*\w|(?:benchmarks|docs|tests)/[\w./\-]*[\w/]"
                 rf"|(?:{PACKAGES})/[\w/]*\.py)(-?[*<{{])?")
LINK = re.compile(r"\]\([^)\s]*\)")
# (file, reference): why a name that does not resolve is written there on purpose; each entry
# must still occur (test_every_exception_is_still_needed)
EXCEPTIONS = {
    ("docs/benchmarks/bench_perf_firstrun.md", "fastpu._kernels.updates._solve_chunk"):
        "the row solver's name at 7ed51e8, the code the report's demo profile compares against",
    ("docs/serving.md", "tests/recommender_base_test.py"): "a file of benfred/implicit, not of fastpu",
    ("benchmarks/speed/bench_perf_firstrun.py", "fastpu._kernels.homf.walk_rows"):
        "RENAMED maps the names of fastpu at PREV_COMMIT to the current ones",
    ("tests/test_layout.py", "fastpu.x"): "a placeholder in a docstring (import fastpu.x as y)",
    ("tests/test_layout.py", "fastpu.ocmf._problem._sample"): "a name the layout check must refuse",
    ("tests/test_layout.py", "fastpu._core.threads._check"): "a name the layout check must refuse",
    ("tests/model/test_model.py", "fastpu.load"): "the test says this name does not exist",
    ("README.md", "docs/_build/html"): "the site the README's command builds",
    ("README.md", "docs/_build/html/index.html"): "the site the README's command builds",
}


def _resolves(ref):
    if isinstance(ref, tuple):           # a pattern: the name before its placeholder, or all of it
        return any(_resolves(r) for r in ref)
    if "/" in ref:
        if ref.split("/")[0] in ("fastpu", "benchmarks", "docs", "tests"):
            return (ROOT / ref).exists()
        return (ROOT / "fastpu" / ref).exists() or (ROOT / "benchmarks" / ref).exists()
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def _references(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        text = LINK.sub("]()", text)
    for m in REF.finditer(text):
        ref, placeholder = m.group(1), m.group(2)
        if placeholder:          # a pattern (or a name an f-string continues)
            cut = ref[:max(ref.rfind("/"), ref.rfind("."))] or ref
            ref = (ref, cut)
        else:
            ref = ref.rstrip("/")
        yield ref, text[:m.start()].count("\n") + 1


# where the benchmark scripts write: a script may name a report it has not written yet
OUTPUTS = ("docs/benchmarks/", "docs/results/", "benchmarks/results/")


def _unresolved(paths):
    bad = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        for ref, line in _references(path):
            if rel.startswith("benchmarks/") and isinstance(ref, str) and ref.startswith(OUTPUTS):
                continue
            if (rel, ref) not in EXCEPTIONS and not _resolves(ref):
                bad.append(f"{rel}:{line}: {ref}")
    return bad


def test_the_pages_name_what_exists():
    assert not _unresolved(PAGES), "\n".join(_unresolved(PAGES))


def test_the_docstrings_and_comments_name_what_exists():
    assert not _unresolved(SOURCES), "\n".join(_unresolved(SOURCES))


def test_every_exception_is_still_needed():
    for (rel, ref), why in EXCEPTIONS.items():
        assert ref in {r for r, _ in _references(ROOT / rel)}, f"{rel} no longer names {ref}: {why}"


@pytest.mark.parametrize("text, expected", [
    ("see fastpu/_svt_dense.py", ["fastpu/_svt_dense.py"]),
    ("`fastpu._validation.DENSE_LIMIT` and docs/bench_ocmf_speed.md", ["fastpu._validation.DENSE_LIMIT",
                                                                       "docs/bench_ocmf_speed.md"]),
    ("the module `_core/validation.py` (in ocmf/_grid.py)", []),
])
def test_the_check_sees_stale_names(tmp_path, text, expected):
    page = tmp_path / "page.md"
    page.write_text(text)
    assert [ref for ref, _ in _references(page) if not _resolves(ref)] == expected


# --------------------------------------------------------------------- the benchmark reports

REPORTS = ROOT / "docs" / "benchmarks"
PROVENANCE = re.compile(r"^\*Provenance: measured at commits? `[0-9a-f]{7,40}`.* \(\d{4}-\d\d-\d\d")
STALE = re.compile(r"^\*Stale: measured at commit `[0-9a-f]{7,40}`; the code it measures has "
                   r"changed since \(.+\), so the .+ waits? for a re-run\.\*$")


def _report_pages():
    return sorted(p for p in REPORTS.glob("*.md") if p.name != "index.md") + [
        ROOT / "docs" / "reliability.md"]


@pytest.mark.parametrize("page", _report_pages(), ids=lambda p: p.name)
def test_every_report_is_stamped_and_listed(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and PROVENANCE.match(lines[2]), \
        f"{page.name}: line 3 must be the provenance line (commit and date measured on)"
    index = (REPORTS / "index.md").read_text(encoding="utf-8")
    target = page.name if page.parent == REPORTS else f"../{page.name}"
    listed = re.search(rf"\[[^\]]+\]\({re.escape(target)}\)( \(stale\))?", index)
    assert listed, f"docs/benchmarks/index.md does not link {page.name}"
    stale = [ln for ln in lines if ln.startswith("*Stale:")]
    assert all(STALE.match(ln) for ln in stale), stale
    assert bool(stale) == bool(listed.group(1)), \
        f"{page.name}: the page and the index disagree on whether it is stale"


def test_every_script_is_in_the_index():
    index = (REPORTS / "index.md").read_text(encoding="utf-8")
    scripts = [p.name for p in (ROOT / "benchmarks").glob("*/*.py") if not p.name.startswith("_")]
    assert [s for s in scripts if f"`{s}" not in index] == []
