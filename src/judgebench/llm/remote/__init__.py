"""Remote models behind provider APIs: the backends, their rate limits, concurrency, HTTP transport, errors and
Gemini model facts."""
