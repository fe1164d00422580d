"""Server version strings ('8.0.31', '10.11.19-MariaDB-log', '5.6.4-m7-debug') as tuples."""
from __future__ import annotations

from .lazy_re import LazyPattern

_VERSION = LazyPattern(r"(\d+)\.(\d+)\.(\d+)")


def version_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of the leading version number; (0, 0, 0) when there is none."""
    m = _VERSION.match(version.strip())
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
