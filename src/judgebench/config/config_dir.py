"""Where the package's Hydra config groups are (``judgebench/conf``): read by ``judgebench run``, the dry run's
time limit, ``judgebench models`` and the option checks, so that none of them imports another for it."""

from importlib import resources
from pathlib import Path

CONF_DIR = Path(str(resources.files("judgebench") / "conf"))
