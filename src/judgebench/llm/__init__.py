"""Local language models: one loader and scoring layer (:mod:`.local`) shared by every local judge, ranker and rewriter."""
