"""`python -m binlake.cli`: the `binlake` program."""
from binlake.cli.program import entry

entry()
