"""The providers' Batch APIs (OpenAI, Gemini): submitting a judge's prompts as one batch job, saving its id, reading its answers."""
