"""Rewriters: produce a text view of the corpus that rankers and judges then read."""
