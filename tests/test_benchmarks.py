"""Every benchmark script runs: each answers ``--help``, and those whose smoke mode takes seconds
run it (docs/benchmarks/index.md lists the scripts and their reports).

A script that needs an optional package or data set this machine lacks stops with exit status
``_common.MISSING_EXIT`` and a last line ``missing: ...`` on standard error that names it; that,
and only that, is a skip, with the script's own line as the reason. Any other failure fails.
A smoke run writes into a temporary folder: the test checks that no file under docs/ or
benchmarks/results/ changed.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))
import _common  # noqa: E402

TOPICS = ("speed", "quality", "distributed", "reliability")
SCRIPTS = sorted(p.relative_to(BENCH).as_posix() for t in TOPICS
                 for p in (BENCH / t).glob("*.py") if not p.name.startswith("_"))
# the smoke runs that take seconds (CPU) once the kernels are compiled; the others' smoke modes
# take a minute or more (their --help is still run)
QUICK = {
    "speed/bench_ann.py": ["--quick"],
    "speed/bench_csrr_inner.py": ["--quick"],
    "speed/bench_eigen_turn.py": ["--quick"],
    "distributed/bench_distributed_projection.py": ["--quick", "--data", "powerlaw", "--task"],
    "quality/bench_fbgd_tensor.py": ["--quick"],
    "reliability/campaign_reliability.py": ["--list"],
}
TIMEOUT = 600            # seconds per run: generous, a shared machine stretches wall time

# Runs every script with --help in one interpreter (the imports of fastpu, numpy, scipy and
# numba are paid once), each as __main__ with its own folder first on sys.path, as Python runs
# a script; prints one JSON line per script: exit status and output.
_HELP = r"""
import contextlib, io, json, runpy, sys, traceback
bench, scripts = sys.argv[1], sys.argv[2:]
for script in scripts:
    path = f"{bench}/{script}"
    out, err, code = io.StringIO(), io.StringIO(), 0
    saved = (list(sys.path), list(sys.argv))
    sys.path.insert(0, path.rsplit("/", 1)[0])
    sys.argv = [path, "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        code, err = 1, io.StringIO(err.getvalue() + traceback.format_exc())
    sys.path[:], sys.argv[:] = saved
    print(json.dumps(dict(script=script, code=code, out=out.getvalue(), err=err.getvalue())),
          flush=True)
"""


def outcome(code, stderr):
    """("ok", "") for exit status 0; ("skip", the script's missing-line) for a missing optional
    package or data set; ("fail", why) for anything else."""
    if code == 0:
        return "ok", ""
    lines = stderr.strip().splitlines()
    if code == _common.MISSING_EXIT and lines and lines[-1].startswith("missing: "):
        return "skip", lines[-1]
    return "fail", f"exit status {code}:\n{stderr[-4000:]}"


def _check(script, code, stdout, stderr):
    kind, why = outcome(code, stderr)
    if kind == "skip":
        pytest.skip(f"{script}: {why}")
    assert kind == "ok", f"{script}: {why}\n{stdout[-2000:]}"


@pytest.fixture(scope="module")
def helps():
    before = _tree_state()
    proc = subprocess.run([sys.executable, "-c", _HELP, str(BENCH), *SCRIPTS], cwd=ROOT,
                          capture_output=True, text=True, timeout=TIMEOUT)
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["script"] for r in rows] == SCRIPTS, proc.stderr[-4000:]
    assert _tree_state() == before, "a script's --help changed files under docs/ or benchmarks/results/"
    return {r["script"]: r for r in rows}


def _tree_state():
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for folder in (ROOT / "docs", BENCH / "results") for p in folder.rglob("*")
            if p.is_file() and "_build" not in p.parts}


def test_the_scripts_are_found():
    assert len(SCRIPTS) > 25 and "speed/bench_ocmf_speed.py" in SCRIPTS
    assert set(QUICK) <= set(SCRIPTS)
    # every script is in one topic folder; nothing but the shared helpers sits beside them
    assert sorted(p.name for p in BENCH.glob("*.py")) == ["_common.py"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(helps, script):
    r = helps[script]
    _check(script, r["code"], r["out"], r["err"])
    assert r["out"].startswith("usage:"), r["out"][:500]


@pytest.mark.parametrize("script", sorted(QUICK))
def test_smoke_run(script, tmp_path):
    before = _tree_state()
    env = dict(os.environ, TMPDIR=str(tmp_path), MPLBACKEND="Agg",
               FASTPU_BENCH_CACHE=str(tmp_path / "matrices"))
    proc = subprocess.run([sys.executable, str(BENCH / script), *QUICK[script]], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    _check(script, proc.returncode, proc.stdout, proc.stderr)
    assert _tree_state() == before, "a smoke run changed files under docs/ or benchmarks/results/"


def test_a_missing_package_is_named_not_a_crash(capsys):
    with pytest.raises(SystemExit) as exc:
        _common.require("fastpu_no_such_package", purpose="the test")
    assert exc.value.code == _common.MISSING_EXIT
    err = capsys.readouterr().err
    assert err.startswith("missing: the optional package 'fastpu_no_such_package', needed for "
                          "the test")
    assert outcome(exc.value.code, err) == ("skip", err.strip())


def test_a_missing_data_set_is_named(monkeypatch, capsys):
    import fastpu as fp

    def absent(name):
        raise fp.datasets.DataUnavailable(f"{name} is not in the data folder")

    monkeypatch.setattr(fp.datasets, "load", absent)
    with pytest.raises(SystemExit) as exc:
        _common.load_data("ml-1m")
    assert exc.value.code == _common.MISSING_EXIT
    assert capsys.readouterr().err.startswith("missing: the data set 'ml-1m': ml-1m is not in")


@pytest.mark.parametrize("code, err", [
    (1, "Traceback (most recent call last):\n  ...\nImportError: No module named 'x'\n"),
    (_common.MISSING_EXIT, "Traceback ...\nValueError: boom\n"),     # the status alone is not enough
    (2, "missing: the optional package 'x'\n"),                         # nor the line alone
])
def test_a_crash_is_never_a_skip(code, err):
    assert outcome(code, err)[0] == "fail"


def test_provenance_line():
    line = _common.provenance([("abc1234", "2026-11-02"), ("abc1234", "2026-11-03")])
    assert line == "*Provenance: measured at commit `abc1234` (2026-11-02 to 2026-11-03).*"
    assert "not recorded" in _common.provenance([None])
    assert "some measurements' commits were not recorded" in _common.provenance(
        [("abc1234", "2026-11-02"), (None, None)])
    assert _common.provenance().startswith("*Provenance: measured at ")


def test_highrank_lists_each_run_once_and_drops_superseded_ones():
    sys.path.insert(0, str(BENCH / "speed"))
    try:
        import bench_highrank
    finally:
        sys.path.remove(str(BENCH / "speed"))
    old = dict(argv=["--parts", "speed"], stamp=["aaaaaaa", "2026-11-01"])
    both = dict(argv=["--parts", "speed,setup"], stamp=["bbbbbbb", "2026-11-02"])
    quality = dict(argv=["--parts", "quality"], stamp=["ccccccc", "2026-11-03"])
    stamps = {"speed k=64": ["bbbbbbb", "2026-11-02"], "setup": ["bbbbbbb", "2026-11-02"],
              "quality": ["ccccccc", "2026-11-03"]}
    # an older raw file's list of every run: the superseded first run is dropped
    raw = dict(stamps=stamps, runs=[old, both, quality])
    got = bench_highrank.gathered_runs(raw)
    assert got == [(both, ["speed k=64", "setup"]), (quality, ["quality"])]
    assert list(raw["runs"]) == list(stamps)
    # the keyed form after a JSON round trip: equal records are one run
    raw = json.loads(json.dumps(raw))
    assert bench_highrank.gathered_runs(raw) == got
