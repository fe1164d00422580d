"""GTIDs: MySQL GTID sets and MariaDB GTID states (sets), and the filter that keeps a stream's
transactions after a GTID position (filter)."""
