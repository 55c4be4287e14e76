"""Reading an input file as text: strict UTF-8, a BOM skipped, gzip read transparently, the path recorded.

Every TREC reader (``trec.py``) and the LLMJudge id maps go through :func:`read_text`, so one place decides
what an input file may look like and every file a job reads is recorded for its resume key
(``files_read.opened``).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from judgebench.exceptions import DataError
from judgebench.identity.files_read import opened

PathLike = str | os.PathLike[str]

_BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"


def _decompressed(path: PathLike, data: bytes) -> bytes:
    """A gzip file's content (told by its magic bytes, whatever its name); a broken one is a DataError."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(
            path, f"is gzip-compressed but cannot be decompressed ({e}), expected a complete .gz file or plain text"
        ) from None


def read_text(path: PathLike) -> str:
    """The whole file, decoded strictly as UTF-8 (a stray byte is an error, never a silent '?'); a gzip file
    is decompressed first (line numbers in errors are those of the decompressed text)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except IsADirectoryError:
        raise DataError(path, "is a directory, expected a file") from None
    except OSError as e:
        raise DataError(path, f"cannot read file ({e.strerror}), expected a readable file") from None
    opened(path)
    if data.startswith(GZIP_MAGIC):
        data = _decompressed(path, data)
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        start = skip + e.start
        line_start = data.rfind(b"\n", 0, start) + 1
        raise DataError(
            path,
            f"invalid UTF-8 byte 0x{data[start]:02x} at byte offset {start} "
            f"(byte {start - line_start + 1} of the line), expected UTF-8 text",
            data.count(b"\n", 0, start) + 1,
        ) from None


def lines(text: str) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; a trailing '\\r' is dropped so CRLF files read the same."""
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield n, line
