"""judgebench: measure how far LLM relevance judges can be trusted."""

__version__ = "0.1.0"
