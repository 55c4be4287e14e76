"""Local models run in this process: named, downloaded, loaded, encoded, scored in token-budget batches with a
shared prefix cache."""
