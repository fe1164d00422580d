"""Durable checkpoints: a position (plus extra state, e.g. schema history) in one JSON file,
replaced atomically so a crash leaves the old or the new checkpoint, never a torn one."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._util.atomic import atomic_write_text
from ..errors import ConfigError
from .position import Position


class CheckpointStore:
    """File-backed checkpoint: write to a temp file, fsync, rename over, fsync the folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> tuple[Position, dict[str, Any]] | None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"checkpoint {self.path} cannot be read: {exc}",
                              hint="restore it from a backup or remove it to start over") from None
        if not isinstance(data, dict) or "position" not in data:
            raise ConfigError(f"checkpoint {self.path} has no position")
        return Position.from_json(data["position"]), data.get("extra", {})

    def save(self, position: Position, extra: dict[str, Any] | None = None) -> None:
        payload = json.dumps({"version": 1, "position": position.to_json(), "extra": extra or {}},
                             separators=(",", ":"))
        atomic_write_text(self.path, payload)
