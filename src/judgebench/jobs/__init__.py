"""The jobs ``judgebench run`` dispatches (``job=``): ``pipeline`` (a grid cell), ``rank_job`` (a ranking alone),
``labels_only`` (a judge's labels, no systems), ``content_bias`` (the AI-content-bias experiment), and ``dry_run``
(what a job would still cost). ``common`` holds what they share; no job module imports another, except that
each job's ``dry_run=true`` path calls ``dry_run``."""
