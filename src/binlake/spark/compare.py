"""Compare source and Delta rows exactly: one comparable form for values read through PyMySQL
and through Spark (DECIMAL keeps its scale, temporals their fractions, binary its bytes)."""
from __future__ import annotations

from decimal import Decimal
from typing import Any


def comparable(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, Decimal):
        return ("dec", str(v))
    if isinstance(v, (bytes, bytearray)):
        return ("bin", bytes(v).hex())
    if hasattr(v, "isoformat"):
        return ("t", v.isoformat())
    if isinstance(v, (bool, int)):
        return ("i", int(v))
    return ("s", str(v))
