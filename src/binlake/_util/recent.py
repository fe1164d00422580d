"""Bounded caches that keep what is in use: full, they drop their older half, not all."""
from __future__ import annotations

import itertools
from typing import Any

TABLE_CACHE = 16384
"""Entries kept per table cache (the decoder's parsed TABLE_MAPs and its map of table ids,
the snapshot's checked maps). Why so many: a server with more tables than a cache holds
has every map parsed and its decoders compiled again once its entry is dropped
(benchmarks/table_churn.py's `many_tables` measures it). An entry costs little beside the
map the decoder's `tables` holds anyway."""


def make_room(cache: dict[Any, Any], limit: int = TABLE_CACHE) -> None:
    """Room for one more entry: at `limit`, the older half goes (dicts keep insertion order),
    so the entries of recent use stay rather than all being dropped at once."""
    if len(cache) >= limit:
        for key in list(itertools.islice(cache, len(cache) // 2)):
            del cache[key]
