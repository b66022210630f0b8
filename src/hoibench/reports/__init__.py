"""Reports: tables (Markdown, CSV, JSON), matplotlib plots and a self-contained HTML page, built
from evaluation results (see ``docs/interfaces.md`` for the result files)."""

from hoibench.reports._demo import DEMO_ANSWERERS, DEMO_DETECTORS, DemoConfig, DemoOutput, run_demo
from hoibench.reports._figures import (
    Figure,
    binned_head_to_tail,
    class_ap_boxplot,
    grouped_bars,
    head_to_tail_recall_plot,
)
from hoibench.reports._report import Report, ReportFiles, Section
from hoibench.reports._results import (
    MCQ_METRICS,
    ClassRecall,
    MapResult,
    MCQMetricsResult,
    StatsResult,
    load_result,
    load_results,
    result_from_dict,
)
from hoibench.reports._standard import (
    build_report,
    class_ap_head_to_tail,
    class_ap_spread_table,
    head_to_tail_table,
    map_bars_figure,
    map_table,
    mcq_figures,
    mcq_summary_table,
    mcq_table,
    ranking_shift_table,
    stats_table,
)
from hoibench.reports._tables import Table, format_cell

__all__ = [
    "DEMO_ANSWERERS",
    "DEMO_DETECTORS",
    "MCQ_METRICS",
    "ClassRecall",
    "DemoConfig",
    "DemoOutput",
    "Figure",
    "MCQMetricsResult",
    "MapResult",
    "Report",
    "ReportFiles",
    "Section",
    "StatsResult",
    "Table",
    "binned_head_to_tail",
    "build_report",
    "class_ap_boxplot",
    "class_ap_head_to_tail",
    "class_ap_spread_table",
    "format_cell",
    "grouped_bars",
    "head_to_tail_recall_plot",
    "head_to_tail_table",
    "load_result",
    "load_results",
    "map_bars_figure",
    "map_table",
    "mcq_figures",
    "mcq_summary_table",
    "mcq_table",
    "ranking_shift_table",
    "result_from_dict",
    "run_demo",
    "stats_table",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and callable(_obj):
        _obj.__module__ = "hoibench.reports"
del _name, _obj
