"""Command line: one module per command; the shared parser and exit codes in common."""
