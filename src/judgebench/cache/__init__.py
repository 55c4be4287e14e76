"""The persistent call cache: every API answer and local-model score, keyed by what produced it.

``keys`` (call keys, canonical JSON), ``store`` (:class:`CallCache`, both on-disk layouts), ``segments`` (the
append-only layout, the default), ``view`` (a process's index of it), ``packed`` and ``compact`` (the compacted
index), ``migrate`` (between layouts), ``writer`` (stores answers from a background thread, in groups),
``maintenance`` (stats, verify, export, import), ``schema`` (what a usable record looks like), ``cli``
(``judgebench cache``).
"""

from judgebench.cache.keys import call_key
from judgebench.cache.store import STALE_TEMP_S, STORED, CacheStats, CallCache

__all__ = ["CallCache", "CacheStats", "call_key", "STORED", "STALE_TEMP_S"]
