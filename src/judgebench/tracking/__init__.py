"""The MLflow logging contract (docs/tracking.md): one run per job, found later by experiment and tags.

Runs follow MLflow's conventions so that its UI reads them: MLflow's own tags (``mlflow.source.*``, git commit, a
one-line ``mlflow.note.content``, ``mlflow.parentRunId`` under a sweep's parent run), the dataset as a dataset input,
params that define the cell only (the full config is the ``config.yaml`` artifact). Its modules:
``tracking/job_run.py`` (a job's run), ``tracking/mlflow_store.py`` (the store, the experiment, the resume check),
``tracking/run_params.py`` (which config leaves are params), ``tracking/retries.py`` (the store's transient errors
retried) and ``tracking/artifact_store.py`` (artifact locations relative to the store).
"""

from judgebench.tracking import artifact_store  # noqa: F401  (registers the reader of relative artifact locations)
