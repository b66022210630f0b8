"""Reports: tables (Markdown, CSV, JSON), matplotlib plots and a self-contained HTML page, built
from result records (:mod:`hoibench.results`; files in ``docs/interfaces.md``). Results are
fractions; tables and plots show percent."""

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
from hoibench.reports._bright_supplement import embedding_tsne_figure, prompt_ablation_figure
from hoibench.reports._figures import (
    Figure,
    binned_head_to_tail,
    class_ap_boxplot,
    grouped_bars,
    head_to_tail_recall_plot,
    vcoco_ap_figure,
)
from hoibench.reports._mcq_figures import class_distribution_figure
from hoibench.reports._paper_figures import (
    PaperInputs,
    add_paper_sections,
    augmentation_tables,
    class_counts_figure,
    class_counts_table,
    mcq_vs_map_figure,
    mcq_vs_map_table,
    scene_breakdown_figure,
    scene_breakdown_table,
    sg_split_figure,
    sg_split_table,
)
from hoibench.reports._qualitative import (
    detection_qualitative_section,
    failure_cases_section,
    find_image,
    mcq_qualitative_section,
)
from hoibench.reports._reasons import map_reasons
from hoibench.reports._report import Report, ReportFiles, Section
from hoibench.reports._standard import (
    TrainCounts,
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
    vcoco_figures,
    vcoco_table,
)
from hoibench.reports._tables import Table, format_cell

__all__ = [
    "Figure",
    "PaperInputs",
    "Report",
    "ReportFiles",
    "Section",
    "Table",
    "TrainCounts",
    "add_paper_sections",
    "augmentation_tables",
    "binned_head_to_tail",
    "build_report",
    "class_ap_boxplot",
    "class_ap_boxplot_figure",
    "class_ap_head_to_tail",
    "class_ap_spread_table",
    "class_counts_figure",
    "class_counts_table",
    "class_distribution_figure",
    "detection_qualitative_section",
    "embedding_tsne_figure",
    "failure_cases_section",
    "find_image",
    "format_cell",
    "grouped_bars",
    "head_to_tail_figure",
    "head_to_tail_recall_plot",
    "head_to_tail_table",
    "map_bars_figure",
    "map_reasons",
    "map_table",
    "mcq_figures",
    "mcq_qualitative_section",
    "mcq_summary_table",
    "mcq_table",
    "mcq_vs_map_figure",
    "mcq_vs_map_table",
    "paired_difference_table",
    "prompt_ablation_figure",
    "rank_distribution_figure",
    "rank_distribution_table",
    "ranking_shift_figure",
    "ranking_shift_markdown",
    "ranking_shift_rows",
    "ranking_shift_table",
    "scene_breakdown_figure",
    "scene_breakdown_table",
    "sensitivity_figure",
    "sensitivity_table",
    "sg_split_figure",
    "sg_split_table",
    "stats_table",
    "vcoco_ap_figure",
    "vcoco_figures",
    "vcoco_table",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and callable(_obj):
        _obj.__module__ = "hoibench.reports"
del _name, _obj
