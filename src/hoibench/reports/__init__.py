"""Reports: tables (Markdown, CSV, JSON), matplotlib plots and a self-contained HTML page, built
from evaluation results (see ``docs/interfaces.md`` for the result files)."""

from hoibench.reports._analysis_views import (
    class_ap_boxplot_figure,
    class_ap_spread_table,
    head_to_tail_figure,
    paired_difference_table,
    rank_distribution_figure,
    rank_distribution_table,
    ranking_shift_figure,
    ranking_shift_markdown,
    ranking_shift_table,
    sensitivity_figure,
    sensitivity_table,
)
from hoibench.reports._figures import (
    Figure,
    binned_head_to_tail,
    class_ap_boxplot,
    grouped_bars,
    head_to_tail_recall_plot,
)
from hoibench.reports._mcq_figures import class_distribution_figure
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
    head_to_tail_table,
    map_bars_figure,
    map_table,
    mcq_figures,
    mcq_summary_table,
    mcq_table,
    ranking_shift_rows,
    stats_table,
)
from hoibench.reports._tables import Table, format_cell

__all__ = [
    "MCQ_METRICS",
    "ClassRecall",
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
    "class_ap_boxplot_figure",
    "class_ap_head_to_tail",
    "class_ap_spread_table",
    "class_distribution_figure",
    "format_cell",
    "grouped_bars",
    "head_to_tail_figure",
    "head_to_tail_recall_plot",
    "head_to_tail_table",
    "load_result",
    "load_results",
    "map_bars_figure",
    "map_table",
    "mcq_figures",
    "mcq_summary_table",
    "mcq_table",
    "paired_difference_table",
    "rank_distribution_figure",
    "rank_distribution_table",
    "ranking_shift_figure",
    "ranking_shift_markdown",
    "ranking_shift_rows",
    "ranking_shift_table",
    "result_from_dict",
    "sensitivity_figure",
    "sensitivity_table",
    "stats_table",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and callable(_obj):
        _obj.__module__ = "hoibench.reports"
del _name, _obj
