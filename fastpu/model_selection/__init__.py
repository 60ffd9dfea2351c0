"""Judging and choosing models: splits, ranking metrics, search and tuning, comparison, baselines.

- :mod:`.split` — per-user holdout, leave-one-out, validation splits carved from training data;
- :mod:`.metrics` — precision, recall, nDCG, MAP, MRR, AUC at several cut-offs, rated and sampled
  variants, the CSRR paper's cost-sensitive measures, and the popularity baseline's fit;
- :mod:`.select` — random search over a space (:func:`~.select.search`) and tuning with each
  method's default space (:func:`~.select.tune`), on a validation split of the training data only;
- :mod:`.compare` — every method tuned on several splits, tabulated;
- :mod:`.baselines` — the fits of the baselines (the registry, :mod:`fastpu._core.registry`,
  lists them: ``registry.names("baseline")``).

Each module is also an attribute of ``fastpu`` under its own name (``fastpu.split`` is
:mod:`fastpu.model_selection.split`), for the short spelling ``fp.split.holdout``.
"""
