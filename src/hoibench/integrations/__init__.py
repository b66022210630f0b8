"""Adapters to other frameworks' metric APIs (optional extras; import the submodule you need).

* :mod:`hoibench.integrations.torchmetrics`: ``HICOMeanAveragePrecision``, a
  ``torchmetrics.Metric`` for evaluation during training (extra ``torchmetrics``).
"""
