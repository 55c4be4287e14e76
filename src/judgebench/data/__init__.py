"""Reading and writing of evaluation data (TREC qrels, runs, topics, passages), validated on input."""
