"""Regular expressions compiled at their first use.

Why: compiling a pattern takes time, and patterns compiled at import would cost every run
of the `binlake` program, whether or not it meets a statement they parse (a decode of row
events meets few). Compiled once, on first use, they cost the same after that."""
from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """re.compile(pattern, flags), done when match() or fullmatch() is first called (by
    whichever thread: two that race both compile, and either result serves)."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def match(self, text: str) -> Any:
        return (self._compiled or self.compiled()).match(text)

    def fullmatch(self, text: str) -> Any:
        return (self._compiled or self.compiled()).fullmatch(text)
