"""How many human labels a judge's numbers need: the human-budget experiment (``experiment``, with its corrections),
the planner (``plan``, on the judge's own ``signals``), its files and the assessors' sheets (``files``,
``labelling_sheet``) and the read-back of the labels they return; their report sections are
compare/sections/calibration.py and compare/sections/budget_plan.py."""
