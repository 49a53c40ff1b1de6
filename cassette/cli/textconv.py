"""``cassette textconv FILE``: print a cassette with its blobs inlined (the ``diff=cassette`` driver)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cassette.errors import CassetteIOError, CassetteNotFoundError, NotRegularFileError
from cassette.hooks.textconv import render
from cassette.store.files import not_regular_error

HELP = "print a cassette with its blobs inlined, for `git diff` (diff.cassette.textconv)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the cassette file git hands to the driver")


def run(args: argparse.Namespace) -> int:
    try:  # a FIFO or a device (/dev/zero) is refused, not waited on or read forever
        data = render(args.file)
    except NotRegularFileError as exc:
        raise not_regular_error(Path(args.file), exc) from None
    except FileNotFoundError:
        raise CassetteNotFoundError(f"no such file {args.file}. Check the path.", path=args.file) from None
    except IsADirectoryError:
        raise CassetteNotFoundError(
            f"{args.file} is a directory; pass a cassette file.", path=args.file
        ) from None
    except (OSError, ValueError) as exc:  # no permission, a name too long, a NUL byte
        raise CassetteIOError(
            f"cannot read {args.file} ({getattr(exc, 'strerror', None) or exc}). "
            "Check the path and its permissions.",
            path=args.file,
        ) from None
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return 0
