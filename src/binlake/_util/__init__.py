"""Small helpers with no binlake dependencies: atomic file writes, lazily compiled patterns,
bounded caches, server version parsing, the length-encoded integer reader."""
