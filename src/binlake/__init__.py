"""binlake: MySQL and MariaDB change data capture, from the replication protocol to Delta Lake."""

__version__ = "0.1.0"
