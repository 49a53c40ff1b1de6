"""Built-in plugins, registered through the same door as third-party ones.

Each module here implements hooks from :mod:`cassette.hookspecs` with
``@hookimpl``. The plugin manager registers every module named in ``BUILTIN``.
"""

from cassette.plugins.providers import PROVIDERS

# The providers first (their own order is explained beside `PROVIDERS`), then the rest.
BUILTIN = [
    *PROVIDERS,
    "cassette.plugins.redact_default",
    "cassette.plugins.secret_rules",
    "cassette.plugins.semantic_lexical",
    "cassette.plugins.semantic_embeddings",
    "cassette.plugins.semantic_remote",
]
