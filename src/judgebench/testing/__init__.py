"""Test and benchmark helpers: local fake LLM servers speaking the real OpenAI and Gemini HTTP protocols,
so backends are exercised through the official clients without network access."""
