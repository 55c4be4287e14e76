"""Content bias: does a judge label the same passage differently once an LLM has rewritten it?

``job`` runs the paper's experiment as one job (``+experiment=content_bias``); ``statistics`` holds
every comparison of original and rewritten labels, used by that job and by ``compare``'s report;
``figures`` draws the job's figures. Kept light: importing the package imports neither.
"""
