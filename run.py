"""``python run.py [-m] key=value ...`` in a clone: the same entry point as ``judgebench run`` (judgebench/run.py)."""

from judgebench.run import cli

if __name__ == "__main__":
    raise SystemExit(cli())
