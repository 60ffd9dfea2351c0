"""The command line: demo and run, on real and user-supplied data."""

import numpy as np
import pytest
import scipy.sparse as sp

import fastpu as fp
from fastpu import cli


def test_demo_prints_a_table_with_the_baseline(monkeypatch, capsys):
    monkeypatch.setattr(fp.ocmf, "demo_configs",
                        lambda: [("LR-wSQ (ocmf)", dict(k=8, n_iter=2, loss="logistic", rho=0.03))])
    assert cli.main(["demo", "--methods", "ocmf", "--at", "5"]) == 0
    out, err = capsys.readouterr()
    assert "943 users × 1682 items, 100000 positives" in out
    table = out.split("\n\n")[-1]
    assert "popularity" in table and "LR-wSQ (ocmf)" in table and "P@5" in table and "nDCG@5" in table
    assert "[ocmf] iter   2" in err           # per-iteration progress


def test_run_on_a_csv_and_save(tmp_path, capsys):
    rng = np.random.default_rng(0)
    lines = ["user,item,value"] + [f"u{rng.integers(30)},i{rng.integers(20)},1" for _ in range(300)]
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    out_file = tmp_path / "factors.npz"
    code = cli.main(["run", "--method", "ocmf", "--data", str(path), "--param", "k=3",
                     "--param", "n_iter=2", "--param", "loss=square", "--save", str(out_file), "--quiet"])
    assert code == 0
    saved = np.load(out_file, allow_pickle=False)
    assert saved["user_factors"].shape[1] == 3
    assert len(saved["objective"]) == 2
    assert saved["user_ids"].size == saved["user_factors"].shape[0]
    assert "P@5" in capsys.readouterr().out


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
