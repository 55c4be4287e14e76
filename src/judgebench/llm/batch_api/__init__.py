"""The providers' Batch APIs (OpenAI, Gemini): a judge's prompts submitted as one batch job, its id saved, its
answers read into the call cache."""
