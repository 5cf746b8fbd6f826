"""`nicwatch serve`: poll every interval and serve /metrics."""

from __future__ import annotations

import argparse
import os
import sys

from nicwatch.cli import common


def add_parser(subparsers: common.Subparsers) -> argparse.ArgumentParser:
    serve = common.add_command(subparsers, "serve")
    common.add_settings(serve)
    return serve


def run(args: argparse.Namespace) -> int:
    from nicwatch.consumers.identity import StateFileError
    from nicwatch.daemon import Daemon
    config, flags = common.load_config(args)
    try:
        daemon = Daemon(config, args.config, flags)
    except StateFileError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return common.EXIT_USAGE
    daemon.install_signals()
    try:
        daemon.run()
    except OSError as e:  # typically the listen address: in use, or not ours to bind
        print(f"nicwatch: error: {config.web_listen_address}: {e.strerror or e}", file=sys.stderr)
        return common.EXIT_USAGE
    # Everything is written and closed. Leave without freeing the heap object by object:
    # with thousands of interfaces that alone took most of a second after SIGTERM.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
