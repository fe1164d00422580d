"""The `binlake` command line: the program and its top-level commands (program), how
`binlake decode` runs (decode_command), logging set-up shared by the commands (logs). The other
commands live with their subsystem (replica/cli.py, serve/cli.py, spark/cli.py, ...)."""
