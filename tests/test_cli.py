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
    with pytest.raises(SystemExit, match="neither a data set name"):
        cli.main(["run", "--data", "no-such-file.csv"])
    with pytest.raises(SystemExit):
        cli.main(["run", "--param", "novalue"])
    with pytest.raises(SystemExit, match="unknown method 'xyz'"):
        cli.main(["demo", "--methods", "xyz"])


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
