"""judgebench benchmarks: one command each (``python -m benchmarks.NAME`` from the repository root).

call_economy   paid calls of the paper grid vs label-set size, rerun, parallel cold start
throughput     judgments/s of LLMJudge against the fake server vs concurrency/latency and rate limits
versus         LLMJudge vs a bare AsyncOpenAI loop vs UMBRELA, same pairs, same server
local_scoring  per-pair cost of RG / PRP scoring on CPU by batch size
overhead       where the time of a 14-system grid goes when judging costs nothing
"""
