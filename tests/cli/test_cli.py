"""The command line: demo, run and recommend, on real and user-supplied data."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import cli
from fastpu.model import load_model as load


def test_demo_prints_a_table_with_the_baseline(monkeypatch, capsys):
    from fastpu._core import progress

    monkeypatch.setattr(progress, "_is_terminal", lambda stream: True)  # a screen, not a log
    monkeypatch.setattr(fp.ocmf, "demo_configs",
                        lambda: [("LR-wSQ (ocmf)", dict(k=8, n_iter=2, loss="logistic", rho=0.03),
                                  "a legend")])
    assert cli.main(["demo", "--methods", "ocmf", "--at", "5"]) == 0
    out, err = capsys.readouterr()
    assert "943 users × 1682 items, 100000 positives" in out
    table, legend = out.split("\n\n")[-2:]
    assert "popularity" in table and "LR-wSQ (ocmf)" in table and "P@5" in table and "nDCG@5" in table
    assert "LR-wSQ (ocmf)  a legend" in legend and "WRMF" not in table   # --methods: no baselines
    # one updating line per configuration: its progress, then its scores
    assert "-- LR-wSQ (ocmf): iter   2" in err
    assert re.search(r"-- LR-wSQ \(ocmf\): P@5 0\.\d{4}  nDCG@5 0\.\d{4}  AUC 0\.\d{4}  "
                     r"seconds \d+\.\d\s*$", err.replace("\r", "\n"), re.M)
    assert "also compiles its numba kernels" in legend  # the first fit's seconds include compiling


def test_demo_fits_on_a_screen(monkeypatch, capsys):
    """The first demo printed 291 lines (CSRR-e alone 100): now one line per configuration."""
    from fastpu._core import progress

    monkeypatch.setattr(progress, "uncompiled", lambda method: True)    # as on a first run
    monkeypatch.setitem(progress._state, "noticed", set())
    monkeypatch.setattr(progress, "_is_terminal", lambda stream: True)  # a screen, not a log
    assert cli.main(["demo", "--background-compile", "off"]) == 0
    out, err = capsys.readouterr()
    lines = out.count("\n") + err.count("\n")
    # a line per configuration while it trains, the table, and one legend line per row
    rows = 1 + sum(len(e.resolve("demo")()) for e in fp._core.registry.entries("method")) + 2
    assert lines <= 3 * rows + 10, (lines, out, err)
    legend = out.split("\n\n")[-1]
    assert "EASE  " in legend and "WRMF  " in legend and "popularity  " in legend
    assert err.startswith("fastpu: compiling the numba kernels of ocmf, fbgd, csrr, homf on first "
                          "use (about ")
    assert "`fastpu warmup` compiles them ahead of time" in err.splitlines()[0]
    assert "-- CSRR-e: iter 100" in err and err.count("-- CSRR-e: P@5") >= 1


def test_demo_into_a_log_writes_one_line_per_configuration(monkeypatch, capsys):
    """Redirected to a file, the demo writes per configuration its last iteration and its
    scores, each on a line of its own, with no carriage returns."""
    from fastpu._core import progress

    monkeypatch.setattr(progress, "_is_terminal", lambda stream: False)
    monkeypatch.setattr(fp.ocmf, "demo_configs",
                        lambda: [("LR-wSQ (ocmf)", dict(k=8, n_iter=2, loss="logistic", rho=0.03),
                                  "one"),
                                 ("SQ-wSQ (ocmf)", dict(k=8, n_iter=2, loss="square", rho=0.1),
                                  "two")])
    assert cli.main(["demo", "--methods", "ocmf", "--background-compile", "off"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    mine = [ln for ln in err.splitlines() if ln.startswith("-- ")]
    assert len(mine) == 4, err
    assert [" iter   2/2 " in ln for ln in mine] == [True, False, True, False], err
    assert [" P@5 0." in ln for ln in mine] == [False, True, False, True], err


def test_run_on_a_csv_and_save(tmp_path, capsys):
    rng = np.random.default_rng(0)
    lines = ["user,item,value"] + [f"u{rng.integers(30)},i{rng.integers(20)},1" for _ in range(300)]
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    out_file = tmp_path / "factors.npz"
    code = cli.main(["run", "--method", "ocmf", "--data", str(path), "--param", "k=3",
                     "--param", "n_iter=2", "--param", "loss=square", "--save", str(out_file), "--quiet"])
    assert code == 0
    saved = load(out_file)                       # the model format, not loose factors
    assert saved.method == "ocmf" and saved.user_factors.shape[1] == 3
    assert len(saved.history) == 2 and saved.params["loss"] == "square"
    assert saved.user_ids.size == saved.user_factors.shape[0] and saved.user_ids[0].startswith("u")
    assert saved.item_ids.size == saved.item_factors.shape[0]
    out = capsys.readouterr().out
    assert "P@5" in out and "saved the ocmf model" in out


def test_run_on_npz_trains_on_everything(tmp_path, capsys):
    Y = sp.random(20, 15, density=0.3, random_state=0, format="csr")
    path = tmp_path / "y.npz"
    sp.save_npz(path, Y)
    assert cli.main(["run", "--data", str(path), "--test-frac", "0", "--param", "k=2",
                     "--param", "n_iter=1", "--quiet"]) == 0
    assert "trained in" in capsys.readouterr().out


def test_bad_arguments_give_clear_messages(capsys):
    assert cli.main(["run", "--data", "ml-100k", "--param", "k=0", "--quiet"]) == 2
    assert "k must be >= 1" in capsys.readouterr().err
    assert cli.main(["run", "--data", "no-such-file.csv"]) == 2
    assert "neither a data set name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--param", "novalue"])
    assert exc.value.code == 2
    assert cli.main(["demo", "--methods", "xyz"]) == 2
    assert "unknown method 'xyz'" in capsys.readouterr().err


def test_compare_writes_a_table(tmp_path, capsys):
    import fastpu.datasets as ds
    from fastpu.cli import main

    rng = np.random.default_rng(0)
    path = tmp_path / "pairs.csv"
    pairs = {(int(u), int(i)) for u, i in zip(rng.integers(0, 30, 400), rng.integers(0, 20, 400))}
    path.write_text("".join(f"{u},{i}\n" for u, i in sorted(pairs)))
    assert ds.read_csv(path).Y.shape == (30, 20)
    out = tmp_path / "cmp.md"
    code = main(["compare", "--data", str(path), "--methods", "popularity,wrmf", "--splits", "2",
                 "--budget", "1", "--out", str(out), "--quiet"])
    assert code == 0
    text = out.read_text()
    assert "| popularity |" in text or "| **popularity** |" in text
    assert "wrmf" in text and "2 random per-user" in text


def _pairs_csv(tmp_path, n=300):
    rng = np.random.default_rng(0)
    lines = ["user,item,value"] + [f"u{rng.integers(30)},i{rng.integers(20)},1" for _ in range(n)]
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(out):
    """(user, rank, item, score) rows of the recommend table."""
    lines = out.strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    return [(u, int(r), it, float(s)) for u, r, it, s in (line.split() for line in lines[start:])]


@pytest.mark.parametrize("method, params", [("csrr", ["variant=e", "k=3"]), ("homf", ["k=3", "T=2"])])
def test_run_save_then_recommend_by_id(tmp_path, capsys, method, params):
    csv = _pairs_csv(tmp_path)
    model_file = tmp_path / "m.npz"
    argv = ["run", "--method", method, "--data", str(csv), "--test-frac", "0", "--param", "n_iter=2",
            "--save", str(model_file), "--quiet"]
    for p in params:
        argv += ["--param", p]
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main(["recommend", "--model", str(model_file), "--users", "u1,u7", "-n", "4",
                     "--exclude-seen", str(csv)]) == 0
    rows = _rows(capsys.readouterr().out)
    model = load(model_file)
    data = fp.datasets.read_csv(str(csv))
    items, scores = fp.recommend(model, data, users=["u1", "u7"], n=4, ids=True)
    want = [(u, r + 1, str(it), sc) for u, its, scs in zip(["u1", "u7"], items, scores)
            for r, (it, sc) in enumerate(zip(its[np.isfinite(scs)], scs[np.isfinite(scs)]))]
    assert [(u, r, it) for u, r, it, _ in rows] == [(u, r, it) for u, r, it, _ in want]
    np.testing.assert_allclose([s for *_, s in rows], [s for *_, s in want], atol=5e-5)
    seen = {(u, i) for u, i in zip(*np.nonzero(data.Y.toarray()))}
    uid, iid = list(data.user_ids), list(data.item_ids)
    assert all((uid.index(u), iid.index(it)) not in seen for u, _, it, _ in rows)


def test_recommend_on_a_model_without_ids_takes_row_numbers(tmp_path, capsys):
    model = fp.Factorization(np.ones((3, 1)), np.array([[1.0], [3.0], [2.0]]), method="test")
    model.save(tmp_path / "m.npz")
    assert cli.main(["recommend", "--model", str(tmp_path / "m.npz"), "--users", "2", "-n", "5"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert [(u, it) for u, _, it, _ in rows] == [("2", "1"), ("2", "2"), ("2", "0")]
    assert cli.main(["recommend", "--model", str(tmp_path / "m.npz"), "-n", "1"]) == 0
    assert [(u, it) for u, _, it, _ in _rows(capsys.readouterr().out)] == [("0", "1"), ("1", "1"), ("2", "1")]


def test_run_save_checks_the_folder_before_training(tmp_path, capsys, monkeypatch):
    def no_training(*a, **k):
        raise AssertionError("trained before checking --save")

    monkeypatch.setattr(cli._commands, "_fit", no_training)
    csv = _pairs_csv(tmp_path, 50)
    assert cli.main(["run", "--data", str(csv), "--save", str(tmp_path / "no" / "m.npz")]) == 2
    assert "--save" in capsys.readouterr().err
    assert cli.main(["run", "--data", str(csv), "--save", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_recommend_bad_input_exits_2_with_a_message(tmp_path, capsys):
    model = fp.Factorization(np.ones((3, 1)), np.ones((2, 1)), user_ids=np.array([5, 6, 7]),
                             item_ids=np.array(["a", "b"]))
    path = tmp_path / "m.npz"
    model.save(path)
    cases = [
        (["--model", str(tmp_path / "none.npz")], "no such file"),
        (["--model", str(path), "--users", "5,9"], r"--users has 1 user id(s) the model does not know: [9]"),
        (["--model", str(path), "--users", "x"], "--users expects integer user ids, got 'x'"),
        (["--model", str(path), "--users", ","], "--users expects comma-separated user ids"),
    ]
    np.savez(tmp_path / "other.npz", a=np.ones(2))
    cases.append((["--model", str(tmp_path / "other.npz")], "not a fastpu model"))
    for argv, msg in cases:
        assert cli.main(["recommend", *argv]) == 2, argv
        assert msg in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["recommend", "--model", str(path), "-n", "0"])
    assert exc.value.code == 2 and "expected a positive integer, got 0" in capsys.readouterr().err


def test_python_dash_m_fastpu_recommend(tmp_path):
    import os
    import pathlib
    import subprocess
    import sys

    model = fp.Factorization(np.ones((2, 1)), np.array([[1.0], [2.0]]), user_ids=np.array(["x", "y"]),
                             item_ids=np.array(["p", "q"]))
    model.save(tmp_path / "m.npz")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-m", "fastpu", "recommend", "--model", str(tmp_path / "m.npz"),
                          "--users", "y", "-n", "2"], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert [(u, it) for u, _, it, _ in _rows(res.stdout)] == [("y", "q"), ("y", "p")]
    bad = subprocess.run([sys.executable, "-m", "fastpu", "recommend", "--model", str(tmp_path / "m.npz"),
                          "--users", "zz"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "does not know: ['zz']" in bad.stderr


@pytest.mark.parametrize("frac", ["-1", "1", "1.5", "nan", "abc"])
def test_test_frac_outside_0_1_is_refused(frac, capsys):
    # -1 used to train silently on everything
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--data", "ml-100k", "--test-frac", frac, "--quiet"])
    assert exc.value.code == 2
    assert "--test-frac expects a number in [0, 1)" in capsys.readouterr().err


def test_every_input_error_exits_2_with_one_line(tmp_path, capsys):
    Y = sp.random(20, 15, density=0.3, random_state=0, format="csr")
    path = tmp_path / "y.npz"
    sp.save_npz(path, Y)
    cases = [
        ["run", "--data", "nowhere.csv"],                                      # missing file
        ["run", "--data", str(path), "--param", "k=0"],                          # bad fit argument
        ["run", "--data", str(path), "--param", "k=2", "--param", "n_iter=1",
         "--threads", "0"],                                                     # bad thread count
        ["run", "--data", str(path), "--method", "fbgd", "--param", "k=2", "--param", "lr=1e9",
         "--param", "optimizer='gd'", "--param", "n_iter=5"],                   # diverges to NaN
        ["demo", "--methods", "nope"],
    ]
    for argv in cases:
        assert cli.main(argv + ["--quiet"]) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("fastpu: ") and "\n" not in err, (argv, err)


def test_header_flags_for_two_columns_of_text_ids(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    path.write_text("".join(f"u{i % 7},m{(3 * i) % 11}\n" for i in range(60)))
    argv = ["run", "--data", str(path), "--test-frac", "0", "--param", "k=2", "--param", "n_iter=1",
            "--quiet"]
    assert cli.main(argv) == 2
    assert "--header / --no-header" in capsys.readouterr().err
    n = len(set((i % 7, (3 * i) % 11) for i in range(60)))
    assert cli.main(argv + ["--no-header"]) == 0
    assert f"(7×11, {n} positives)" in capsys.readouterr().out
    assert cli.main(argv + ["--header"]) == 0          # the first pair read as column names
    assert f"(7×11, {n - 1} positives)" in capsys.readouterr().out


def test_compare_plot_without_out_exits_2_before_any_work(tmp_path, capsys, monkeypatch):
    # --plot without --out used to exit 0 and write nothing
    import fastpu.model_selection.compare

    def boom(*args, **kwargs):
        raise AssertionError("compared although the options were inconsistent")

    monkeypatch.setattr(fastpu.model_selection.compare, "compare", boom)
    png = tmp_path / "x.png"
    assert cli.main(["compare", "--data", "ml-100k", "--plot", str(png), "--quiet"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("fastpu: --plot ") and "needs --out" in err and "\n" not in err
    assert captured.out == "" and not png.exists()


def test_compare_plot_without_matplotlib_exits_2_before_any_work(tmp_path, capsys, monkeypatch):
    """It failed with an ImportError traceback after the whole comparison had run."""
    import sys

    import fastpu.model_selection.compare

    def boom(*args, **kwargs):
        raise AssertionError("compared although --plot could not be drawn")

    monkeypatch.setattr(fastpu.model_selection.compare, "compare", boom)
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # as if it were not installed
    out, png = tmp_path / "t.md", tmp_path / "x.png"
    assert cli.main(["compare", "--data", "ml-100k", "--out", str(out), "--plot", str(png), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fastpu: --plot ") and "needs matplotlib" in err and "\n" not in err
    assert not out.exists() and not png.exists()


def test_compare_bad_metric_exits_2_naming_it(tmp_path, capsys):
    Y = sp.random(20, 15, density=0.3, random_state=0, format="csr")
    path = tmp_path / "y.npz"
    sp.save_npz(path, Y)
    code = cli.main(["compare", "--data", str(path), "--methods", "popularity,ocmf", "--splits", "1",
                     "--budget", "1", "--metric", "ndgc@10"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err.strip().startswith("fastpu: metric must be") and "'ndgc@10'" in captured.err
    assert "[compare]" not in captured.err          # nothing was trained or reported


def _no_work(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("loaded data or trained before the arguments were checked")

    monkeypatch.setattr(cli._commands, "_load_data", boom)
    monkeypatch.setattr(cli._commands, "_fit", boom)


@pytest.mark.parametrize("param, msg", [
    # was "fastpu.ocmf.fit() got multiple values for keyword argument 'seed'", after loading the data
    ("seed=3", "argument --param: seed is set with --seed (e.g. --seed 3), not --param seed=3"),
    ("verbose=False", "argument --param: verbose is set with --quiet (per-iteration progress is on "
                      "unless --quiet is given), not --param verbose=False"),
])
def test_run_param_the_cli_sets_itself_names_its_option(param, msg, capsys, monkeypatch):
    _no_work(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--data", "ml-100k", "--param", "k=2", "--param", param, "--quiet"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("usage: fastpu run") and msg in err, err


@pytest.mark.parametrize("method, params, msg", [
    # was "fit() got an unexpected keyword argument 'lamda'", after loading the data
    ("ocmf", ["lamda=3"], r"argument --param: ocmf.fit takes no parameter 'lamda' (did you mean "
                          r"'lam'?); it takes "),
    ("homf", ["TT=2", "bogus=1"], "argument --param: homf.fit takes no parameters 'TT', 'bogus'; it takes "),
])
def test_run_unknown_param_is_a_usage_error_naming_it_and_the_method(method, params, msg, capsys,
                                                                     monkeypatch):
    _no_work(monkeypatch)
    argv = ["run", "--method", method, "--data", "ml-100k", "--quiet"]
    for p in params:
        argv += ["--param", p]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and msg in err and "Traceback" not in err, err
    taken = err.split("; it takes ")[1]
    assert "lam" in taken and "n_iter" in taken and "seed" not in taken.split(", ")


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_run_workers_below_1_is_refused(workers, capsys, monkeypatch):
    # --workers 0 trained on this machine without a word (0 reads as "no cluster")
    _no_work(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--data", "ml-100k", "--workers", workers, "--quiet"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"argument --workers: expected a positive integer, got {workers}" in err


@pytest.mark.parametrize("value", ["abc", "0", "2.5"])
def test_run_param_k_is_checked_before_any_work(value, capsys, monkeypatch):
    # --param k=abc printed the run's start line, loaded the data, and only then failed in fit
    _no_work(monkeypatch)
    code = cli.main(["run", "--method", "ocmf", "--data", "ml-100k", "--quiet", "--param", f"k={value}"])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("fastpu: k must be ") and ">= 1" in err, err
    assert "fastpu run:" not in out


def test_compare_out_is_checked_before_any_work(tmp_path, capsys, monkeypatch):
    # an --out in a missing folder failed after the whole comparison had run
    import fastpu.model_selection.compare

    def boom(*args, **kwargs):
        raise AssertionError("compared before --out was checked")

    monkeypatch.setattr(fastpu.model_selection.compare, "compare", boom)
    monkeypatch.setattr(cli._commands, "_load_data", boom)
    missing, png = str(tmp_path / "no" / "cmp.md"), str(tmp_path / "no" / "x.png")
    cases = [(["--out", missing], f"--out {missing!r}: the folder {str(tmp_path / 'no')!r} does not exist"),
             (["--out", str(tmp_path)], f"--out {str(tmp_path)!r} is a directory; expected a file name "
                                        "such as table.md"),
             (["--out", str(tmp_path / "cmp.md"), "--plot", png], f"--plot {png!r}: the folder")]
    for argv, msg in cases:
        assert cli.main(["compare", "--data", "ml-100k", "--quiet", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("fastpu: ") and msg in err, err
    assert not (tmp_path / "cmp.md").exists()


def test_recommend_exclude_seen_names_the_option_and_the_data_it_needs(tmp_path, capsys):
    csv = _pairs_csv(tmp_path)
    model_file = tmp_path / "m.npz"
    assert cli.main(["run", "--data", str(csv), "--test-frac", "0", "--param", "k=2", "--param", "n_iter=1",
                     "--save", str(model_file), "--quiet"]) == 0
    other = tmp_path / "other.csv"            # another data set: its ids are not the model's
    other.write_text("user,item\n" + "".join(f"v{i % 5},j{i % 3}\n" for i in range(15)))
    sp.save_npz(tmp_path / "y.npz", sp.random(4, 3, density=0.5, random_state=0, format="csr"))
    bare = tmp_path / "bare.npz"
    fp.Factorization(np.ones((3, 1)), np.ones((2, 1)), method="test").save(bare)
    missing = str(tmp_path / "train.csv")
    cases = [
        # said "--data '...train.csv' is neither ...", an option the command does not have
        ([str(model_file), missing], f"fastpu: --exclude-seen {missing!r} is neither a data set name"),
        # excluded nothing without a word
        ([str(model_file), str(other)], f"fastpu: --exclude-seen {str(other)!r} shares no user id with "
                                        "the model (its users e.g. ['v0', 'v1', 'v2'], the model's e.g. "
                                        "['u0', 'u1', 'u10']); expected data about the model's users "
                                        "and items"),
        # said "Y_seen ...", a name of the Python API
        ([str(bare), str(tmp_path / "y.npz")], f"fastpu: --exclude-seen {str(tmp_path / 'y.npz')!r}: "
                                               "Y_seen has shape 4×3, expected 3×2"),
    ]
    for (model, seen), msg in cases:
        assert cli.main(["recommend", "--model", model, "-n", "2", "--exclude-seen", seen]) == 2, seen
        err = capsys.readouterr().err
        assert err.startswith(msg) and "\n" not in err.strip(), err


def test_threads_bound_numba_and_blas_for_the_whole_command(monkeypatch):
    """CSRR-I/II's SVD runs on BLAS's threads: --threads has to reach them too."""
    from threadpoolctl import threadpool_info, threadpool_limits

    seen = {}

    def fake_run(args):
        seen["numba"] = fp.get_num_threads()
        seen["blas"] = {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}
        return 0

    monkeypatch.setattr(cli._commands, "cmd_run", fake_run)
    with threadpool_limits(limits=2, user_api="blas"):
        assert cli.main(["run", "--method", "csrr", "--data", "ml-100k", "--threads", "1"]) == 0
        assert seen == {"numba": 1, "blas": {1}}
        assert cli.main(["run", "--method", "csrr", "--data", "ml-100k"]) == 0
        assert seen["blas"] == {2}


def test_each_sub_command_help_opens_with_what_it_does(capsys):
    for command, opening in (("run", "Train one method on a data set or your own file."),
                             ("compare", None), ("recommend", None), ("demo", None)):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        out = capsys.readouterr().out
        description = out.split("\n\n")[1]
        assert description[:1].isupper() and description.rstrip().endswith(".")
        if opening:
            assert description.strip() == opening


@pytest.mark.parametrize("variant, k", [("e", 64), ("I", None)])
def test_run_csrr_gets_a_rank_only_where_the_variant_has_one(tmp_path, variant, k):
    """--method csrr without --param k fits variant 'e' at k = 64 and CSRR-I without a rank
    (it chooses its own; a k would be refused)."""
    from fastpu._core import registry

    assert registry.get("csrr").rank_for({"variant": variant}) == k
    assert registry.get("ocmf").rank_for({}) == 64 and registry.get("popularity").rank_for({}) is None


def test_run_prints_the_first_run_notice_always(monkeypatch, capsys, tmp_path):
    """The first run compiled for 13 s in silence: the command line says so, even with --quiet."""
    from fastpu._core import progress

    monkeypatch.setattr(progress, "uncompiled", lambda method: method == "csrr")
    monkeypatch.setitem(progress._state, "noticed", set())
    csv = tmp_path / "pairs.csv"
    csv.write_text("user,item\n" + "".join(f"u{i % 7},i{i % 5}\n" for i in range(40)))
    assert cli.main(["run", "--method", "csrr", "--data", str(csv), "--test-frac", "0", "--quiet",
                     "--param", "k=2", "--param", "n_iter=2"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("fastpu: compiling the numba kernels of csrr on first use (about ")
    assert "`fastpu warmup`" in err


# ------------------------------------------------------------- what a new user runs into

def _fit_file(tmp_path, test_frac="0"):
    csv = _pairs_csv(tmp_path)
    model_file = tmp_path / "m.npz"
    assert cli.main(["run", "--data", str(csv), "--test-frac", test_frac, "--param", "k=3",
                     "--param", "n_iter=2", "--save", str(model_file), "--quiet"]) == 0
    return csv, model_file


def test_recommend_leaves_out_the_training_items_unless_keep_seen(tmp_path, capsys):
    """`fastpu recommend --users u12` ranked an item u12 was trained on first."""
    csv, model_file = _fit_file(tmp_path)
    capsys.readouterr()
    data = fp.datasets.read_csv(str(csv))
    trained = {(data.user_ids[u], data.item_ids[i]) for u, i in zip(*data.Y.nonzero())}
    assert cli.main(["recommend", "--model", str(model_file), "--users", "u1,u7", "-n", "20"]) == 0
    out = capsys.readouterr().out
    assert "excluding the items each user was trained on" in out
    rows = _rows(out)
    assert rows and not {(u, it) for u, _, it, _ in rows} & trained
    assert cli.main(["recommend", "--model", str(model_file), "--users", "u1,u7", "-n", "20",
                     "--keep-seen"]) == 0
    kept = _rows(capsys.readouterr().out)
    assert {(u, it) for u, _, it, _ in kept} & trained


def test_recommend_warns_about_a_test_split_given_as_seen_items(tmp_path, capsys):
    """A --exclude-seen file that shares no positive with what the users were trained on (the
    test split, another data set's rows) is named, with what was expected."""
    csv, model_file = _fit_file(tmp_path)
    data = fp.datasets.read_csv(str(csv))
    trained = {(data.user_ids[u], data.item_ids[i]) for u, i in zip(*data.Y.nonzero())}
    unseen = [(u, i) for u in data.user_ids for i in data.item_ids if (u, i) not in trained]
    test = tmp_path / "test.csv"
    test.write_text("user,item\n" + "".join(f"{u},{i}\n" for u, i in unseen[::7]))
    capsys.readouterr()
    assert cli.main(["recommend", "--model", str(model_file), "-n", "3", "--exclude-seen", str(test)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"fastpu: warning: --exclude-seen {str(test)!r}: Y_seen shares no positive "
                          "with the training positives"), err


def test_recommend_writes_a_csv(tmp_path, capsys):
    import csv as csv_module

    _, model_file = _fit_file(tmp_path)
    out = tmp_path / "recs.csv"
    assert cli.main(["recommend", "--model", str(model_file), "--users", "u1,u7", "-n", "4",
                     "--out", str(out)]) == 0
    assert f"wrote 8 rows (user,rank,item,score) to {out}" in capsys.readouterr().out
    with open(out, newline="") as fh:
        rows = list(csv_module.DictReader(fh))
    assert [r["user"] for r in rows] == ["u1"] * 4 + ["u7"] * 4
    assert [int(r["rank"]) for r in rows] == [1, 2, 3, 4] * 2
    model = fp.load_model(model_file)
    items, scores = fp.recommend(model, users=["u1", "u7"], n=4)
    assert [r["item"] for r in rows] == [str(i) for i in items.ravel()]
    np.testing.assert_array_equal([float(r["score"]) for r in rows], scores.ravel())
    assert cli.main(["recommend", "--model", str(model_file), "--out", str(tmp_path / "no" / "r.csv")]) == 2
    assert "--out" in capsys.readouterr().err


def test_a_data_set_name_without_its_dash_gets_a_did_you_mean(capsys):
    assert cli.main(["run", "--data", "ml100k"]) == 2
    assert capsys.readouterr().err.strip().endswith("; did you mean 'ml-100k'?")
    assert cli.main(["run", "--data", "ML-1M"]) == 2
    assert "did you mean 'ml-1m'?" in capsys.readouterr().err


@pytest.mark.parametrize("argv, hint", [(["--k", "32"], "--param k=32"), (["--n-iter=5"], "--param n_iter=5"),
                                        (["--lam"], "--param lam=VALUE")])
def test_a_fit_parameter_given_as_an_option_hints_at_param(argv, hint, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--data", "ml-100k", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"unrecognized arguments: {' '.join(argv)}; a fit parameter is given as --param NAME=VALUE: {hint}" in err


def test_run_without_a_rank_fits_at_k_64(tmp_path, capsys):
    csv = _pairs_csv(tmp_path)
    assert cli.main(["run", "--data", str(csv), "--param", "n_iter=1", "--test-frac", "0", "--quiet",
                     "--save", str(tmp_path / "m.npz")]) == 0
    assert "k=64" in capsys.readouterr().out
    assert fp.load_model(tmp_path / "m.npz").user_factors.shape[1] == 64


def test_negative_values_are_refused_as_python_refuses_them(tmp_path, capsys):
    """`fastpu run --data neg.csv` trained a -1 (a dislike) as a positive where fp.ocmf.fit
    refuses it: both refuse, and the command line names --threshold."""
    path = tmp_path / "neg.csv"
    path.write_text("user,item,value\na,x,1\na,y,-1\nb,y,1\nb,z,1\nc,x,1\nc,z,1\n")
    with pytest.raises(ValueError, match="negative stored values"):
        fp.ocmf.fit(fp.datasets.read_csv(str(path)), 2)
    for command in (["run", "--test-frac", "0"], ["compare", "--splits", "1"]):
        assert cli.main([*command, "--data", str(path), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"fastpu: --data {str(path)!r} has 1 negative stored value(s) (min -1)")
        assert "pass --threshold T" in err
    assert cli.main(["run", "--data", str(path), "--threshold", "1", "--test-frac", "0", "--quiet",
                     "--param", "k=2", "--param", "n_iter=1"]) == 0
    assert "(3×3, 5 positives)" in capsys.readouterr().out
