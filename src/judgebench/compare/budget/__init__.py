"""How many human labels a judge's numbers need: the human-budget experiment (``experiment``, its corrections and
its report), the planner (``plan``, on the judge's own ``signals``), its files and the assessors' sheets (``files``,
``labelling_sheet``) and the read-back of the labels they return, with the plan's report (``plan_report``)."""
