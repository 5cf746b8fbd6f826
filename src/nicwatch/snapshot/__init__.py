"""Snapshot files: format, diff and the run report."""
