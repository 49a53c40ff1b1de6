"""``python -m cassette.devserver``: an alias of :mod:`cassette.testing.devserver`."""

import sys

from cassette.testing.devserver import RULES, DevServer, RecordedRequest, Rule, main

__all__ = ["RULES", "DevServer", "RecordedRequest", "Rule", "main"]

if __name__ == "__main__":
    sys.exit(main())
