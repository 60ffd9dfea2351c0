"""Extras are added to a clone's editable install with ``-e`` (``pip install ".[dask]"`` after
the editable test install would replace it with a copy); docs/install.md says so."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_readme_installs_only_its_two_commands():
    readme = (ROOT / "README.md").read_text()
    installs = re.findall(r'pip install (?:-e )?"\.\[[a-z,]+\]"', readme)
    assert installs == ['pip install ".[data]"', 'pip install -e ".[test,data]"',
                        'pip install -e ".[docs]"'], installs


def test_extras_are_added_with_dash_e_after_the_editable_install():
    page = (ROOT / "docs" / "install.md").read_text()
    plain = re.findall(r'pip install "\.\[[a-z,]+\]"', page)
    assert plain == ['pip install ".[dask]"'] and "without the\n`-e`" in page
    assert 'pip install -e ".[dask]"' in page and "keep the `-e`" in page


def test_docs_install_extras_with_dash_e():
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        if page.name == "install.md":          # names the plain form to warn against it
            continue
        assert not re.search(r'pip install "\.\[(dask|ann|pandas|progress)\]"', text), page.name
