"""The C core: the extension `_core` (the *.c and *.h files here) and its one loader and
switchboard, native.py, which decides every choice between the C paths and their Python
twins (binlog/, cdc/)."""
