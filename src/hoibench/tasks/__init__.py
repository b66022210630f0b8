"""hoibench in the evaluation harnesses VLM teams report from.

- lmms-eval (EvolvingLMMs-Lab/lmms-eval): ``LMMS_EVAL_PLUGINS=hoibench`` adds this folder to
  lmms-eval's task search path; its YAML files define the ``hoibench_mcq`` task group
  (:mod:`hoibench.tasks.lmms_eval` holds the functions they name).
- VLMEvalKit (open-compass/VLMEvalKit): :mod:`hoibench.tasks.vlmevalkit` writes the benchmark TSV
  it reads and reads its prediction files back for ``hoibench mcq score``.
"""
