"""``python run.py [-m] key=value ...`` in a clone: the entry point of ``judgebench run`` (judgebench/cli/run.py)."""

from judgebench.cli.run import cli

if __name__ == "__main__":
    raise SystemExit(cli())
