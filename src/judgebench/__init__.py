"""judgebench: measure how far LLM relevance judges can be trusted."""

__version__ = "0.1.0"

from judgebench.config import resolvers as _resolvers  # noqa: E402
from judgebench.identity import moved_modules as _moved_modules  # noqa: E402

_resolvers.register()
_moved_modules.install()
