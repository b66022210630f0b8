"""hoibench.results: the one results model, and the files that hold it.

Every result type (:data:`KINDS`) writes and reads its JSON object (``to_json(model=...,
benchmark=...)`` with a ``kind`` and a schema ``version``, ``from_json``); a
:class:`ResultRecord` pairs a result with its model, benchmark and the other keys of its file;
:func:`read_results` / :func:`write_result` are the only readers and writers of result files.
Python values are fractions; the JSON keeps percent where its schema says so (see
``docs/interfaces.md``, "Results").
"""

from hoibench.evaluation import (
    SCHEMA_VERSION,
    ClassRecall,
    HICOMapCI,
    HICOMapResult,
    HICOMatches,
    MCQResult,
    VCOCOResult,
)
from hoibench.results._assemble import hico_headline, hico_map_record, mcq_record
from hoibench.results._files import (
    GROUND_TRUTH_KEY,
    read_result,
    read_results,
    write_record,
    write_result,
)
from hoibench.results._record import KINDS, Result, ResultRecord, file_stem, result_from_json
from hoibench.results._stats import BenchmarkStats

__all__ = [
    "GROUND_TRUTH_KEY",
    "KINDS",
    "SCHEMA_VERSION",
    "BenchmarkStats",
    "ClassRecall",
    "HICOMapCI",
    "HICOMapResult",
    "HICOMatches",
    "MCQResult",
    "Result",
    "ResultRecord",
    "VCOCOResult",
    "file_stem",
    "hico_headline",
    "hico_map_record",
    "mcq_record",
    "read_result",
    "read_results",
    "result_from_json",
    "write_record",
    "write_result",
]
