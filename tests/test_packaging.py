"""The set-up contract: README commands, CI script, public API and docstrings."""

import inspect
import os
import pathlib
import re
import shlex

import numpy as np
import pytest

import fastpu as fp

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def _command_line(ci_lines, command):
    """Index of the CI line that runs ``command`` right after a ``set +e``."""
    hits = [i for i, line in enumerate(ci_lines) if line.strip() == command]
    assert hits, f"CI does not run the README command {command!r}"
    assert ci_lines[hits[0] - 1].strip() == "set +e", "CI must catch the command's exit status"
    return hits[0]


def test_ci_runs_the_readme_commands_in_order():
    readme = (ROOT / "README.md").read_text()
    blocks = [b.strip() for b in _bash_blocks(readme)]
    assert len(blocks) == 2 and "fastpu demo" in blocks[0]
    assert "pip install -e " in blocks[1] and "pytest" in blocks[1]
    ci = (ROOT / ".ci" / "run").read_text()
    lines = ci.splitlines()
    first, second = _command_line(lines, blocks[0]), _command_line(lines, blocks[1])
    assert first < second                      # the install trap: regular install first
    assert "python3 -m venv" in "\n".join(lines[:first])   # one fresh venv for both
    assert "-eq 5" in ci                       # pytest's "no tests" exit code fails CI
    docs = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    assert len(docs) == 1 and "sphinx -W" in docs[0]
    assert docs[0].strip() in ci               # CI builds the site with the README's command
    assert "python -m mypy" in ci


def _interactions_csv(path, seed=0):
    """A user,item CSV with text ids (users u0..u59, items i0..i39) and some structure."""
    rng = np.random.default_rng(seed)
    pairs = {(f"u{u}", f"i{(u % 4) * 10 + rng.integers(0, 10)}") for u in range(60) for _ in range(6)}
    pairs |= {(f"u{rng.integers(0, 60)}", f"i{rng.integers(0, 40)}") for _ in range(60)}
    path.write_text("user,item\n" + "".join(f"{u},{i}\n" for u, i in sorted(pairs)))


def test_readme_opens_with_the_own_data_example_and_stays_short():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    calls = ["read_csv(", "holdout(", ".fit(", "evaluate(", ".recommend(", ".save("]
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.startswith("import")]
    assert len(lines) <= 7 and all(any(c in ln for ln in lines) for c in calls), lines
    assert readme.index("## Your own data") < readme.index("## Where next")


def test_readme_example_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    code = code.replace("n_iter=10", "n_iter=2")   # the same calls, fewer iterations
    _interactions_csv(tmp_path / "interactions.csv")
    namespace = {}
    cwd = os.getcwd()
    os.chdir(tmp_path)                             # the example reads a CSV, saves a model file
    try:
        exec(compile(code, "README.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    items, data, train = namespace["items"], namespace["data"], namespace["train"]
    assert items.ndim == 1 and len(items) == 10
    assert set(items.tolist()) <= set(data.item_ids.tolist())          # item ids, not numbers
    u1 = int(np.flatnonzero(train.user_ids == "u1")[0])
    assert not set(train.item_ids[train.Y[[u1]].indices].tolist()) & set(items.tolist())
    back = fp.load_model(tmp_path / "model.npz")
    np.testing.assert_array_equal(back.item_factors, namespace["model"].item_factors)


def test_readme_command_line_example_runs_on_a_csv_of_text_ids(tmp_path, monkeypatch, capsys):
    """The README's `fastpu run` / `fastpu recommend` lines, as written, on a user,item file."""
    from fastpu import cli

    readme = (ROOT / "README.md").read_text()
    lines = [ln for ln in readme.splitlines() if ln.startswith(("fastpu run ", "fastpu recommend "))]
    assert len(lines) == 2, lines
    _interactions_csv(tmp_path / "interactions.csv")
    monkeypatch.chdir(tmp_path)
    for line in lines:
        argv = shlex.split(line)[1:] + ["--quiet", "--param", "n_iter=2"] * line.startswith("fastpu run")
        assert cli.main(argv) == 0, line
    out = capsys.readouterr().out
    assert "u1" in out and "u2" in out and (tmp_path / "model.npz").exists()


def test_the_package_imports_from_the_folder_that_holds_a_clone_named_fastpu(tmp_path):
    """A script run from the clone's parent folder imported the clone folder (which has no
    __init__.py) as an empty namespace package: `module 'fastpu' has no attribute 'datasets'`.
    The editable install is a path entry (pyproject's package-dir), found in the same search."""
    import subprocess
    import sys

    (tmp_path / "fastpu").symlink_to(ROOT, target_is_directory=True)
    script = tmp_path / "mine.py"
    script.write_text("import fastpu\nfastpu.datasets\nprint(fastpu.__file__)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert pathlib.Path(out.stdout.strip()).resolve() == ROOT / "fastpu" / "__init__.py"
    assert 'package-dir = { "" = "." }' in (ROOT / "pyproject.toml").read_text()


def test_public_api_is_listed_and_documented():
    for name in fp.__all__:
        assert hasattr(fp, name), name
    modules = [fp.ocmf, fp.optim, fp.split, fp.metrics, fp.datasets, fp.fbgd, fp.csrr, fp.homf,
               fp.select, fp.compare, fp.baselines, fp.distributed, fp]
    missing = []
    for mod in modules:
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                doc = inspect.getdoc(obj) or ""
                if name not in ("demo_configs", "cache_dir") and not ("Parameters" in doc and "Returns" in doc):
                    missing.append(f"{mod.__name__}.{name}")
    assert "Returns" in inspect.getdoc(fp.cache_dir) and ">>>" in inspect.getdoc(fp.cache_dir)
    for obj in (fp.recommend, fp.evaluate, fp.set_num_threads):
        doc = inspect.getdoc(obj)
        assert "Parameters" in doc and "Returns" in doc
    assert not missing, missing


def test_import_sets_a_passive_openmp_wait_policy_unless_chosen():
    import os
    import subprocess
    import sys

    code = "import os, fastpu; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PASSIVE"
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ACTIVE"


# --- the compiled-kernel cache: never inside the package folder (the install trap) ---

_KERNEL_SCRIPT = """
import fastpu
from fastpu._kernels import losses
assert losses.loss_value(0, 1.0, 0.5) == 0.25
assert callable(fastpu.ocmf.fit)
stats = losses.loss_value.stats
print(stats.cache_path)
print(sum(stats.cache_hits.values()))
"""


def _installed_copy(tmp_path):
    """A copy of the package in its own folder, as pip would install it (no caches)."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(ROOT / "fastpu", site / "fastpu",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return site


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _run_kernel(site, cwd, **env_extra):
    import os
    import subprocess
    import sys

    drop = ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "FASTPU_CACHE_DIR", "XDG_CACHE_HOME",
            "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", **env_extra)
    out = subprocess.run([sys.executable, "-W", "always", "-c", _KERNEL_SCRIPT], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True)
    path, hits = out.stdout.split()
    return pathlib.Path(path), int(hits), out.stderr


@pytest.mark.parametrize("where", ["FASTPU_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "NUMBA_CACHE_DIR"])
def test_kernel_cache_goes_to_the_user_cache_folder_never_into_the_package(tmp_path, where):
    site = _installed_copy(tmp_path)
    before = _files(site)
    target = tmp_path / "target"
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    path, hits, err = _run_kernel(site, cwd, **{where: str(target)})
    expected_root = {"FASTPU_CACHE_DIR": target, "XDG_CACHE_HOME": target / "fastpu",
                     "HOME": target / ".cache" / "fastpu", "NUMBA_CACHE_DIR": target}[where]
    assert path.is_relative_to(expected_root), (path, expected_root)
    if where != "NUMBA_CACHE_DIR":            # fastpu's layout: <version>-py<XY>-<hash>/fastpu._kernels
        assert path.parent.parent == expected_root
        assert path.parent.name.startswith(fp.__version__ + "-py")
        assert path.name == "fastpu._kernels"
    assert hits == 0 and any(path.glob("losses.loss_value-*.nbi")), err
    assert _files(site) == before           # nothing written into the "installed" package
    path2, hits2, _ = _run_kernel(site, cwd, **{where: str(target)})
    assert path2 == path and hits2 == 1       # the next process loads the cache
    assert "RuntimeWarning" not in err


def test_unwritable_kernel_cache_warns_once_and_still_writes_nothing_into_the_package(tmp_path):
    site = _installed_copy(tmp_path)
    before = _files(site)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    path, hits, err = _run_kernel(site, tmp_path, FASTPU_CACHE_DIR=str(blocker / "cache"))
    assert err.count("RuntimeWarning: fastpu cannot write its compiled-kernel cache") == 1, err
    assert "FASTPU_CACHE_DIR" in err
    assert path.parent.name.startswith("fastpu-kernels-") and hits == 0
    assert not path.exists()                  # the process's private folder is removed at exit
    assert _files(site) == before


def test_kernel_cache_folders_are_keyed_by_install_location_and_version(tmp_path, monkeypatch):
    from fastpu._core import cache as _cache

    a, b = _cache._install_key("/one/site/fastpu"), _cache._install_key("/two/site/fastpu")
    assert a != b and a.startswith(fp.__version__ + "-") and b.startswith(fp.__version__ + "-")
    monkeypatch.setenv("FASTPU_CACHE_DIR", str(tmp_path))
    assert fp.cache_dir().parent == tmp_path
    assert fp.cache_dir().name == _cache._install_key(str(ROOT / "fastpu"))


def test_kernel_cache_locator_leaves_other_packages_to_numba(tmp_path):
    from numba.core import caching

    from fastpu._core import cache as _cache

    def f():
        return 1

    assert caching.CacheImpl._locator_classes[0] is _cache.FastpuCacheLocator
    other = tmp_path / "other.py"
    other.write_text("")
    assert _cache.FastpuCacheLocator.from_function(f, str(other)) is None
    assert _cache._subfolder(str(ROOT / "fastpu" / "_kernels" / "csr.py")) == "fastpu._kernels"
    assert _cache._subfolder(str(ROOT / "fastpu" / "ocmf.py")) == "fastpu"
    assert _cache._subfolder(str(ROOT / "tests" / "naive.py")) is None


def test_version_is_written_once():
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, flags=re.M)
    assert re.search(r'^dynamic = \["version"\]$', project, flags=re.M)
    assert 'version = { attr = "fastpu._core.version.__version__" }' in pyproject
    src = (ROOT / "fastpu" / "_core" / "version.py").read_text()
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+"$', src, flags=re.M)
    assert f"## [{fp.__version__}]" in (ROOT / "CHANGELOG.md").read_text()
    assert (ROOT / "fastpu" / "py.typed").exists()
    assert "BSD-3-Clause" in pyproject and "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()


def test_docs_and_typecheck_tools_are_extras_not_runtime_dependencies():
    pyproject = (ROOT / "pyproject.toml").read_text()
    runtime = re.search(r"^dependencies = \[(.*?)\]$", pyproject, flags=re.M).group(1).lower()
    extras = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    docs = re.search(r"^docs = \[(.*?)\]$", extras, flags=re.M).group(1).lower()
    for tool in ("sphinx", "myst-parser", "numpydoc"):
        assert tool in docs and tool not in runtime
    assert "mypy" in re.search(r"^typecheck = \[(.*?)\]$", extras, flags=re.M).group(1)
    assert "mypy" not in runtime


def test_the_test_environment_has_implicit():
    """implicit's baselines (als, bpr) are tested, never skipped: implicit is in the test extra
    (it installs from a wheel), and the test environment has it."""
    extras = (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]", 1)[1]
    test = re.search(r"^test = \[(.*?)\]$", extras, flags=re.M | re.S).group(1)
    assert '"implicit>=' in test
    import implicit.cpu.als  # noqa: F401   (fails here, not silently elsewhere)


def _cache_folder(root, name, source=None):
    folder = root / name
    (folder / "fastpu").mkdir(parents=True)
    (folder / "fastpu" / "kernel.nbi").write_text("x")
    if source is not None:
        (folder / "source.txt").write_text(str(source) + "\n")
    return folder


def test_clear_cache_prunes_the_folders_of_installations_that_are_gone(tmp_path, monkeypatch, capsys):
    """Temporary clones and old virtual environments left a folder each (65 in one user's cache)."""
    from fastpu import cli
    from fastpu._core import cache as _cache

    root = tmp_path / "cache"
    monkeypatch.setenv("FASTPU_CACHE_DIR", str(root))
    own = _cache_folder(root, fp.cache_dir().name, source=ROOT / "fastpu")
    alive_pkg = tmp_path / "venv" / "fastpu"
    (alive_pkg / "_kernels").mkdir(parents=True)
    (alive_pkg / "_core").mkdir()
    (alive_pkg / "_core" / "version.py").write_text('__version__ = "0.0.7"\n')
    (alive_pkg / "_kernels" / "csr.py").write_text("# its kernels\n")
    alive = _cache_folder(root, _cache._install_key(str(alive_pkg), "0.0.7"), source=alive_pkg)
    # the same installation's folders of an earlier version and of earlier kernel sources
    older = _cache_folder(root, _cache._install_key(str(alive_pkg), "0.0.6"), source=alive_pkg)
    edited = _cache_folder(root, "0.0.7-py311-aaaaaaaaaaaaaaaa", source=alive_pkg)
    gone = _cache_folder(root, "0.1.0-py311-bbbbbbbbbbbbbbbb", source=tmp_path / "deleted" / "fastpu")
    unknown = _cache_folder(root, "0.1.0-py310-cccccccccccccccc")          # made before the record
    (root / "notes.txt").write_text("a user's file")

    assert fp.clear_cache() == sorted([edited, older, gone])
    assert own.exists() and alive.exists() and unknown.exists()
    assert not (gone.exists() or older.exists() or edited.exists())
    assert cli.main(["cache"]) == 0 and capsys.readouterr().out.strip() == str(fp.cache_dir())
    assert cli.main(["cache", "--prune"]) == 0
    assert "removed 0 folder(s)" in capsys.readouterr().out
    assert cli.main(["cache", "--clear"]) == 0
    # the folder without fastpu's record is not identified as fastpu's: never deleted
    assert "removed 2 folder(s) of every installation's" in capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir()) == [unknown.name, "notes.txt"]
    with pytest.raises(TypeError, match="stale must be True or False"):
        fp.clear_cache(stale="yes")


def test_each_installation_records_its_package_folder_in_its_cache(tmp_path):
    site = _installed_copy(tmp_path)
    path, hits, err = _run_kernel(site, tmp_path, FASTPU_CACHE_DIR=str(tmp_path / "cache"))
    folders = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    source = (folders[0] / "source.txt").read_text().strip()
    assert os.path.realpath(source) == os.path.realpath(site / "fastpu"), (source, site)
