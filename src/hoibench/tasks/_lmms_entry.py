"""The module the lmms-eval task files name (``!function _lmms_entry.doc_to_text``).

lmms-eval loads a ``!function`` by the file beside the YAML first, and it turns every error raised
while it loads a task — an ``ImportError`` included — into a log line and exit status 0, so a venv
where ``hoibench`` cannot be imported would "pass" having asked nothing. This file is that beside
file: it re-exports :mod:`hoibench.tasks.lmms` (one module, so the caches are shared) and turns a
failed import into ``SystemExit`` — which lmms-eval does not catch — with one line saying what to
install (docs/mcq-harnesses.md, "Harnesses")."""

try:
    from hoibench.tasks.lmms import (  # noqa: F401
        aggregate_avg_precision,
        aggregate_avg_recall,
        aggregate_exact_match,
        aggregate_instance_f1,
        aggregate_macro_f1,
        aggregate_micro_f1,
        doc_to_target,
        doc_to_text,
        doc_to_visual,
        process_results,
        setting_1_docs,
        setting_2_docs,
    )
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without hoibench
    raise SystemExit(
        f"error: hoibench lmms-eval tasks: cannot import hoibench.tasks.lmms ({exc}); install hoibench "
        "into the Python that runs lmms-eval (docs/mcq-harnesses.md, Harnesses: the _base.pth line)"
    ) from exc
