"""Small helpers with no binlake dependencies: atomic file writes, lazily compiled patterns,
bounded caches, server version parsing."""
