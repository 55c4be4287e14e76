"""Estimates of the work a cell still needs before it runs: prompts, tokens, FLOPs, GPU-hours, at measured rates
where there are some."""
