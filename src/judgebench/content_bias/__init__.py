"""Content bias: does a judge label the same passage differently once an LLM has rewritten it?

``statistics`` holds every comparison of original and rewritten labels, used by the job
(``judgebench.jobs.content_bias``, ``+experiment=content_bias``) and by ``compare``'s report; ``figures``
draws the job's figures. Kept light: importing the package imports neither.
"""
