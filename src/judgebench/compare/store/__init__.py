"""compare's traffic with MLflow: the job runs found and read as one frame, and the compare run logged."""
