"""An edit to any kernel source, a helper another file inlines included, recompiles every kernel.

numba's own check compares only the modification time and size of the file that defines a
cached function; ocmf's row solver inlines ``losses.loss_derivs`` from another file. fastpu's
cache folder is keyed by a digest of every file in ``fastpu/_kernels/`` (fastpu/_core/cache.py).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

FIT = """
import numpy as np, scipy.sparse as sp, fastpu as fp
rng = np.random.default_rng(1)
Y = sp.random(60, 40, density=0.15, random_state=rng, format="csr")
Y.data[:] = 1.0
m = fp.ocmf.fit(Y, 4, loss="logistic", n_iter=3, seed=0, dtype="float64")
print(repr(float(np.abs(m.user_factors @ m.item_factors.T).sum())), fp.cache_dir())
"""


def _copy(tmp_path: pathlib.Path) -> pathlib.Path:
    site = tmp_path / "site"
    shutil.copytree(ROOT / "fastpu", site / "fastpu",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return site


def _fit(site: pathlib.Path, cache: pathlib.Path, cwd: pathlib.Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), FASTPU_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", FIT], env=env, cwd=cwd, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    value, folder = out.stdout.split()
    assert pathlib.Path(folder).parent == cache
    return float(value), folder


def test_an_edited_helper_in_another_file_recompiles_the_kernel_that_inlines_it(tmp_path):
    site = _copy(tmp_path)
    cache = tmp_path / "cache"
    before, folder_before = _fit(site, cache, tmp_path)
    assert _fit(site, cache, tmp_path) == (before, folder_before)      # the cache is used as is
    losses = site / "fastpu" / "_kernels" / "losses.py"
    src = losses.read_text()
    assert src.count("-y * sig") == 1
    losses.write_text(src.replace("-y * sig", "-3.0 * y * sig"))
    after, folder_after = _fit(site, cache, tmp_path)
    fresh, _ = _fit(site, tmp_path / "fresh-cache", tmp_path)
    assert after != before and after == fresh                            # the edited code ran
    assert folder_after != folder_before and pathlib.Path(folder_after).is_dir()
    # the old folder no longer matches the installation: ``fastpu cache --prune`` removes it
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), FASTPU_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-m", "fastpu", "cache", "--prune"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert not pathlib.Path(folder_before).exists() and pathlib.Path(folder_after).is_dir()


def test_the_key_changes_with_any_kernel_file_and_with_nothing_else(tmp_path):
    from fastpu._core import cache as C

    site = _copy(tmp_path)
    pkg = str(site / "fastpu")
    key = C._install_key.__wrapped__(pkg)
    (site / "fastpu" / "ocmf" / "_fit.py").write_text("# not a kernel\n", encoding="utf-8")
    assert C._install_key.__wrapped__(pkg) == key
    for name in ("linalg.py", "rowpool.py", "new_helper.py"):
        path = site / "fastpu" / "_kernels" / name
        path.write_text((path.read_text() if path.exists() else "") + "\n# edited\n")
        changed = C._install_key.__wrapped__(pkg)
        assert changed != key and changed.startswith(key.rsplit("-", 1)[0] + "-")
        key = changed
    assert C._install_key.__wrapped__(pkg, "9.9.9").startswith("9.9.9-py")
