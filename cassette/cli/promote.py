"""``cassette promote TRACE --run ID --to CASSETTE [--test tests/test_x.py]``: a production run, as a test."""

from __future__ import annotations

import argparse
import time

from cassette.core.model import Interaction
from cassette.errors import PromoteError
from cassette.maintenance.promote import list_runs, promote

HELP = "turn one run of a production trace (or a cendor / SDK log) into a cassette and a pytest file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace", help="the JSONL trace (cassette.trace / CASSETTE_TRACE, cendor-style, or log pairs)"
    )
    parser.add_argument("--run", help="the run id to promote, or 'last' (default: the only run in the file)")
    parser.add_argument("--to", help="the cassette to write, e.g. tests/cassettes/refund.json")
    parser.add_argument(
        "--test", help="also write a pytest file that replays the cassette, e.g. tests/test_refund.py"
    )
    parser.add_argument(
        "--kind",
        action="append",
        choices=("llm", "tool", "http"),
        help="keep only calls of this kind (repeatable)",
    )
    parser.add_argument("--list", action="store_true", help="list the runs in the trace and exit")
    parser.add_argument("--skip-bad", action="store_true", help="promote the readable lines, list the others")
    parser.add_argument("--force", action="store_true", help="overwrite --to and --test if they exist")


def run(args: argparse.Namespace) -> int:
    if args.list:
        runs = list_runs(args.trace)
        for info in runs:
            started = (
                time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(info.started)) + " UTC"
                if info.started is not None
                else "-"
            )
            counts = ", ".join(f"{n} {k}" for k, n in sorted(info.kinds.items()))
            lines = f"lines {info.first_line}-{info.last_line}"
            print(f"{info.run}  {started}  {info.calls} calls ({counts})  {lines}")
        if not runs:
            print(f"{args.trace}: no calls")
        return 0
    if not args.to:
        raise PromoteError(
            "cassette promote needs --to CASSETTE (the file to write), or --list to see the runs."
        )
    kinds = set(args.kind or ())

    def where(interaction: Interaction) -> bool:
        return interaction.kind in kinds

    report = promote(
        args.trace,
        args.to,
        run=args.run,
        where=where if kinds else None,
        test=args.test,
        skip_bad=args.skip_bad,
        overwrite=args.force,
    )
    print(report)
    return 0
