"""compare: cross-judge tables and figures, read back from MLflow only."""
