"""The ``kubelite`` command: parses arguments and calls the library; no logic of its own."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubelite", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the API server")
    serve.add_argument("--store", default="sqlite:///./data/state.db", help="storage URL")
    args = parser.parse_args(argv)
    if args.command == "serve":
        print("API server: see the next issue (the storage engine is ready)", file=sys.stderr)
        return 0
    return 2
