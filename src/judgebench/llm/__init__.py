"""Talking to language models: remote APIs (:mod:`.remote`), the providers' Batch APIs (:mod:`.batch_api`), local
models (:mod:`.local`), work estimates (:mod:`.estimate`), and the prompt templates all of them fill."""
