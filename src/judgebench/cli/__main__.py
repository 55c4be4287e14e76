"""``python -m judgebench.cli ...``: the ``judgebench`` console script, as ``python -m`` runs a package."""

from judgebench.cli import main

raise SystemExit(main())
