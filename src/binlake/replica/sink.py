"""Where `binlake stream` writes records, and how a restart avoids duplicates there.

A file sink is exactly-once: the checkpoint stores the file's length at the last durable
commit, and a restart truncates the file back to it before resuming from the same position.
Standard output cannot be taken back, so it is at-least-once; every record carries its
position, which only grows, so a consumer can drop the few re-sent after a crash. So is a
path that is not a regular file (a FIFO, /dev/null): it cannot be truncated nor fsynced.
"""
from __future__ import annotations

import io
import os
import stat
import sys
from pathlib import Path
from typing import IO, Literal

from ..errors import ConfigError


class OutputSink:
    def __init__(self, path: str | None, resume_bytes: int | None) -> None:
        self._bin: IO[bytes] | None | Literal[False] = False  # (found on the first write_bytes)
        self._text_pending = True  # text may sit in fh's buffer (stdout): flushed once
        try:
            self._open(path, resume_bytes)
        except OSError as exc:
            raise ConfigError(f"cannot write the --out file {path}: {exc.strerror or exc}"
                              + (f" ({exc.filename})" if exc.filename and str(exc.filename) != path
                                 else ""),
                              hint="give a writable file path") from None

    def _open(self, path: str | None, resume_bytes: int | None) -> None:
        self.path = Path(path) if path else None
        self._raw: io.BufferedWriter[io.RawIOBase] | None = None
        if self.path is None:
            self.fh: IO[str] = sys.stdout
            return
        if self.path.exists() and not stat.S_ISREG(self.path.stat().st_mode):
            # A FIFO or a device: written as it is, at-least-once, no size in the checkpoint
            # (fsync and truncate fail on them).
            self.fh = open(self.path, "w", encoding="utf-8", newline="\n")
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        size = self.path.stat().st_size if self.path.exists() else None
        if resume_bytes is not None and (size or 0) < resume_bytes:
            # Truncating would pad with zero bytes: the records the checkpoint counts are gone.
            raise ConfigError(
                f"the output file {self.path} has {size or 0} bytes, but the checkpoint says "
                f"{resume_bytes} were written" + ("" if size is not None else " (the file is missing)"),
                hint="restore the output file, or remove the checkpoint and the file to start over")
        f = open(self.path, "r+b") if size is not None else open(self.path, "wb")
        if resume_bytes is not None:
            f.truncate(resume_bytes)  # drop what was written after the last checkpoint
        f.seek(0, io.SEEK_END)
        # Lines go out in writes of up to 1 MiB (flushed at each checkpoint and at close).
        raw = io.BufferedWriter(f.detach(), buffer_size=1 << 20)
        self._raw = raw
        self.fh = io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=False)

    def write(self, line: str) -> None:
        self.fh.write(line)
        self._text_pending = True

    def write_bytes(self, data: bytes) -> None:
        """UTF-8 lines (decode_command.write_records' record lines), a list of records at a
        time: into the binary buffer under fh (a file's holds 1 MiB; stdout's passes a
        list's bytes on in one write); text written before is flushed first, so lines keep
        their order. A stream that does not write UTF-8 gets them as text."""
        binary = self._binary
        if binary is None:
            self.fh.write(data.decode("utf-8"))
            return
        if self._text_pending:
            self.fh.flush()
            self._text_pending = False
        binary.write(data)

    @property
    def _binary(self) -> IO[bytes] | None:
        found = self._bin
        if found is False:
            import codecs

            enc = getattr(self.fh, "encoding", None)
            raw: IO[bytes] | None = getattr(self.fh, "buffer", None)
            ok = raw is not None and enc and codecs.lookup(enc).name == "utf-8" and os.linesep == "\n"
            found = self._bin = raw if ok else None
        return found

    def durable_size(self) -> int | None:
        """Flush and fsync; the size to store in the checkpoint (None for stdout, a FIFO or
        a device)."""
        self.fh.flush()
        if self._raw is None:
            return None
        os.fsync(self._raw.fileno())
        return self._raw.tell()

    def close(self) -> None:
        if self.path is not None:
            self.fh.close()
        else:
            self.fh.flush()
