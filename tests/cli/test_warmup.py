"""Compiling ahead (fastpu/cli/_warmup.py): `fastpu warmup` and the demo's background process."""

import time

import pytest

import fastpu as fp
from fastpu import cli
from fastpu.cli import _warmup


def test_jobs_are_each_methods_demo_configurations_and_its_default_fit():
    got = _warmup.jobs(["ocmf", "csrr"])
    want = ([("ocmf", label, kw) for label, kw, _ in fp.ocmf.demo_configs()]
            + [("ocmf", "ocmf default", {"k": 8})]
            + [("csrr", label, kw) for label, kw, _ in fp.csrr.demo_configs()]
            + [("csrr", "csrr default", {"k": 8})])
    assert got == want


def test_run_jobs_fits_each_job_for_one_iteration():
    Y = fp.datasets.synthetic(40, 30, rank=2, density=0.1, seed=0).Y
    Y_train, Y_test = fp.split.holdout(Y, test_frac=0.2, seed=0)
    seen, spans = [], []
    real_fit = fp.ocmf.fit

    def spy(Y, **kw):
        seen.append(kw["n_iter"])
        t0 = time.perf_counter()
        time.sleep(0.05 * len(seen))          # 0.05 s, then 0.1 s: each job's own seconds
        model = real_fit(Y, **kw)
        spans.append(time.perf_counter() - t0)
        return model

    mp = pytest.MonkeyPatch()
    mp.setattr(fp.ocmf, "fit", spy)
    try:
        t0 = time.perf_counter()
        done = _warmup.run_jobs([("ocmf", "a", dict(k=3, n_iter=10)), ("ocmf", "b", dict(k=2))],
                                Y_train, Y_test)
        total = time.perf_counter() - t0
    finally:
        mp.undo()
    assert [label for label, _ in done] == ["a", "b"] and seen == [1, 1]
    # each job reports the seconds of its own fit (and evaluation): at least its fit's, and the
    # jobs' together no more than the whole call
    assert all(s >= span for (_, s), span in zip(done, spans)), (done, spans)
    assert sum(s for _, s in done) <= total


def test_warmup_command_compiles_in_processes_and_reports(capsys):
    assert cli.main(["warmup", "--methods", "csrr", "--processes", "2"]) == 0
    out = capsys.readouterr().out
    assert "compiling the kernels of csrr" in out and "done in" in out


def test_warmup_command_rejects_unknown_methods_and_process_counts(capsys):
    assert cli.main(["warmup", "--methods", "ocmf,nope"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["warmup", "--processes", "0"])
    assert exc.value.code == 2 and "expected a positive integer, got 0" in capsys.readouterr().err


def test_background_process_runs_its_jobs_and_exits_cleanly():
    Y = fp.datasets.synthetic(40, 30, rank=2, density=0.1, seed=0).Y
    proc = _warmup.start_background([("csrr", "c", dict(k=2, variant="e"))], Y)
    assert proc is not None
    proc.join(300)
    assert proc.exitcode == 0


@pytest.mark.parametrize("mode", ["on", "off"])
def test_demo_with_and_without_background_compile(monkeypatch, capsys, mode):
    started = []
    real = _warmup.start_background

    def spy(*args, **kw):
        proc = real(*args, **kw)
        started.append(proc)
        return proc

    monkeypatch.setattr(_warmup, "start_background", spy)
    monkeypatch.setattr(fp.ocmf, "demo_configs",
                        lambda: [("SQ (ocmf)", dict(k=4, n_iter=1, loss="square", rho=0.1),
                                  "a legend")])
    assert cli.main(["demo", "--methods", "ocmf", "--at", "5", "--quiet",
                     f"--background-compile={mode}"]) == 0
    assert "SQ (ocmf)" in capsys.readouterr().out.split("\n\n")[-1]
    assert len(started) == (1 if mode == "on" else 0)
    for proc in started:                 # finished or terminated by the demo
        assert proc is None or not proc.is_alive()


def test_demo_rejects_an_unknown_background_compile_mode(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--background-compile=maybe"])
    assert exc.value.code == 2 and "invalid choice: 'maybe'" in capsys.readouterr().err


def test_the_default_jobs_also_fold_in_and_recommend():
    """fold-in's row solver runs in float64 whatever the model's dtype, so its kernels are not
    the fit's: a first fold_in after `fastpu warmup` compiled for about 19 s. Each method's
    default job now folds two rows in and recommends (CSRR-I/II have no fold-in)."""
    Y = fp.datasets.synthetic(40, 30, rank=2, density=0.1, seed=0).Y
    Y_train, Y_test = fp.split.holdout(Y, test_frac=0.2, seed=0)
    calls = []
    real_fold, real_rec = fp.model.fold_in, fp.model.recommend

    mp = pytest.MonkeyPatch()
    mp.setattr(fp.model, "fold_in", lambda m, Y, **kw: calls.append(("fold_in", m.method)) or real_fold(m, Y, **kw))
    mp.setattr(fp.model, "recommend", lambda m, *a, **kw: calls.append(("recommend", m.method)) or real_rec(m, *a, **kw))
    try:
        jobs = [j for j in _warmup.jobs() if j[1].endswith(" default")]
        _warmup.run_jobs(jobs, Y_train, Y_test)
        _warmup.run_jobs([("ocmf", "a demo configuration", dict(k=2))], Y_train, Y_test)
    finally:
        mp.undo()
    methods = [j[0] for j in jobs]
    assert calls == [(what, m) for m in methods for what in ("fold_in", "recommend")]
