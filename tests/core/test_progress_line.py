"""Progress as one updating line (tqdm or the plain fallback) and the first-run notice."""

import io

import numpy as np
import pytest

import fastpu as fp
from fastpu._core import progress


@pytest.fixture
def plain(monkeypatch):
    monkeypatch.setenv("FASTPU_PROGRESS", "plain")


def test_plain_fallback_rewrites_one_line(plain):
    out = io.StringIO()
    p = progress.Progress("ocmf", verbose=True, stream=out)
    for it in range(1, 4):
        p.step(it, 10.0 / it)
    p.finish()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")          # one line, ended by finish
    assert text.count("\r") == 3 and "[ocmf] iter   3  objective      3.33333" in text


def test_an_iteration_without_inner_steps_does_not_show_inner_0(plain):
    """ocmf's row path runs no inner solver iterations: the line leaves out "inner 0" (the
    history keeps the count); an iteration that ran some shows them."""
    out = io.StringIO()
    p = progress.Progress("ocmf", verbose=True, stream=out)
    p.step(1, 5.0, inner=0)
    p.step(2, 4.0, inner=7)
    p.finish()
    first, second = out.getvalue().strip("\n").split("\r")[1:]
    assert "inner" not in first and second.endswith("inner 7")
    assert [h["inner"] for h in p.history] == [0, 7]


class Terminal(io.StringIO):
    """A stream that says it is a terminal (where progress is one updating line)."""

    def isatty(self):
        return True


def test_tqdm_line_when_installed(monkeypatch):
    pytest.importorskip("tqdm")
    monkeypatch.delenv("FASTPU_PROGRESS", raising=False)
    out = Terminal()
    p = progress.Progress("homf", verbose=True, stream=out, total=5)
    for it in range(1, 3):
        p.step(it, 1.0)
    p.note("a note on a line of its own")
    p.step(3, 0.5)
    p.finish()
    text = out.getvalue()
    assert "[homf] iter   2/5" in text and "[homf] a note on a line of its own\n" in text
    assert text.rstrip("\n").splitlines()[-1].lstrip("\r").startswith("[homf] iter   3/5")


@pytest.mark.parametrize("interval", [0.0, 3600.0])
def test_a_log_that_is_not_a_terminal_gets_lines_of_their_own(monkeypatch, interval):
    # redirected output (a file, a pipe): no carriage returns piling iterations onto one line;
    # at most one line per LOG_INTERVAL while it runs, and always the last
    monkeypatch.delenv("FASTPU_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "LOG_INTERVAL", interval)
    out = io.StringIO()
    p = progress.Progress("ocmf", verbose=True, stream=out, total=4)
    for it in range(1, 5):
        p.step(it, 10.0 / it)
    p.finish()
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    iters = [ln.split()[2] for ln in text.splitlines() if " iter " in ln]
    assert iters == (["1/4", "2/4", "3/4", "4/4"] if interval == 0.0 else ["4/4"])


def test_a_fit_prints_nothing_unless_verbose(capsys):
    Y = fp.datasets.synthetic(20, 15, rank=2, density=0.2, seed=0).Y
    fp.ocmf.fit(Y, 2, n_iter=2)
    assert capsys.readouterr().err == ""


def test_compile_notice(monkeypatch, plain):
    out = io.StringIO()
    monkeypatch.setattr(progress, "uncompiled", lambda method: method == "fbgd")
    monkeypatch.setitem(progress._state, "noticed", set())
    text = progress.compile_notice(["ocmf", "fbgd", "fbgd-pitf"], stream=out)
    assert text == out.getvalue().strip()
    secs = fp._core.registry.get("fbgd").compile_seconds
    assert text == (f"fastpu: compiling the numba kernels of fbgd on first use (about {secs:.0f} s, "
                    "once per installation; later runs load them from the cache; `fastpu warmup` "
                    "compiles them ahead of time)")
    assert progress.compile_notice(["fbgd"], stream=out) is None          # once per process
    # a verbose fit prints it before its progress line
    monkeypatch.setitem(progress._state, "noticed", set())
    monkeypatch.setattr(progress, "uncompiled", lambda method: True)
    err = io.StringIO()
    p = progress.Progress("csrr-e", verbose=True, stream=err)
    p.step(1, 1.0)
    p.finish()
    assert err.getvalue().startswith("fastpu: compiling the numba kernels of csrr on first use")


def test_uncompiled_sees_the_cache():
    Y = fp.datasets.synthetic(20, 15, rank=2, density=0.2, seed=0).Y
    fp.ocmf.fit(Y, 2, n_iter=1)
    assert not progress.uncompiled("ocmf")          # compiled in this process (or cached)
    assert not progress.uncompiled("implicit-als")  # not one of fastpu's kernel modules
    assert np.isscalar(fp._core.registry.get("ocmf").compile_seconds)
