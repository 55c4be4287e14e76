"""Local language models: one loader and scoring layer (:mod:`.transformers_model`) shared by every local judge,
ranker and rewriter."""
