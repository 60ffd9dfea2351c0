"""The set-up contract: README commands, CI script, public API and docstrings."""

import inspect
import pathlib
import re

import fastpu as fp

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = [b.strip() for b in _bash_blocks(readme)]
    assert len(blocks) == 2 and "fastpu demo" in blocks[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert blocks[1] in ci.splitlines()[ci.splitlines().index("set +e") + 1]
    assert "-eq 5" in ci            # pytest's "no tests" exit code fails CI


def test_readme_example_runs():
    readme = (ROOT / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[0]
    code = code.replace("n_iter=10", "n_iter=2")   # the same calls, fewer iterations
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["items"].shape == (3, 10)


def test_public_api_is_listed_and_documented():
    for name in fp.__all__:
        assert hasattr(fp, name), name
    modules = [fp.ocmf, fp.tron, fp.split, fp.metrics, fp.datasets, fp.fbgd, fp.csrr, fp.homf,
               fp.prox, fp.apg]
    missing = []
    for mod in modules:
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                doc = inspect.getdoc(obj) or ""
                if name != "demo_configs" and not ("Parameters" in doc and "Returns" in doc):
                    missing.append(f"{mod.__name__}.{name}")
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
