"""Judges: something that gives a relevance label 0-3 to (query, passage) pairs."""
