"""The README's install lines keep an editable install (issue 28: `pip install ".[dask]"` after
the README's editable test install silently replaced it with a regular one)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_extras_are_added_with_dash_e_after_the_editable_install():
    readme = (ROOT / "README.md").read_text()
    test_cmd = readme.index('pip install -e ".[test,data]"')
    after = readme[test_cmd:]
    # every later install of an extra from the clone keeps -e (the demo command comes before)
    plain = re.findall(r'pip install "\.\[[a-z,]+\]"', after)
    assert not [p for p in plain if "without `-e`" not in after[after.index(p) - 80:after.index(p) + 80]], plain
    assert 'pip install -e ".[dask]"' in readme
    assert "keep the `-e`" in readme


def test_docs_install_extras_with_dash_e():
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        assert not re.search(r'pip install "\.\[(dask|ann|pandas|progress)\]"', text), page.name
