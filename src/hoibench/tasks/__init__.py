"""hoibench in the evaluation harnesses VLM teams report from.

- lmms-eval (EvolvingLMMs-Lab/lmms-eval): ``LMMS_EVAL_PLUGINS=hoibench`` adds this folder to
  lmms-eval's task search path; its YAML files define the ``hoibench_mcq`` task group
  (:mod:`hoibench.tasks.lmms` holds the functions they name).
- VLMEvalKit (open-compass/VLMEvalKit): :mod:`hoibench.tasks.vlmevalkit` writes the benchmark TSV
  it reads, holds the dataset class that sends ``mcq run``'s message (run through
  ``python -m hoibench.tasks.vlmevalkit_run run.py ...``), and reads its prediction files back for
  ``hoibench mcq score``.
"""

from pathlib import Path

__all__ = ["TASKS_DIR"]

#: the folder of the task files: lmms-eval's ``--include_path`` (lmms-eval 0.7 builds its task
#: index before it adds ``LMMS_EVAL_PLUGINS`` folders, so the plugin variable alone finds nothing)
TASKS_DIR = Path(__file__).resolve().parent
