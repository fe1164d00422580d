"""Structured logs: every record's `extra` fields come out as key=value pairs or as JSON.

binlake logs with `log.info("batch applied", extra={"rows": 120, "lag_s": 1.4})`; the
standard formatter drops those fields, so the CLI installs one of these instead.
"""
from __future__ import annotations

import json
import logging
import sys
from typing import Any

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class KeyValueFormatter(logging.Formatter):
    """`2026-11-21 10:00:00,123 INFO binlake.sync batch applied batch=3 rows=120 lag_s=1.4`"""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        pairs = " ".join(f"{k}={_value(v)}" for k, v in _extras(record).items())
        return f"{text} {pairs}" if pairs else text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg and the extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": round(record.created, 3), "level": record.levelname,
                               "logger": record.name, "msg": record.getMessage(),
                               **_extras(record)}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".")
    text = str(v)
    return json.dumps(text) if (" " in text or not text) else text


def setup(level: int = logging.INFO, json_lines: bool = False) -> None:
    """Route logging to stderr with the structured formatter (CLI entry points call this)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # py4j (Spark's bridge) logs every callback connection at INFO: not the user's business.
    logging.getLogger("py4j").setLevel(max(level, logging.WARNING))
