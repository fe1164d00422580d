"""Tools for development and the demo: a throwaway local MariaDB (devserver) and the demo's
sample database (demo)."""
