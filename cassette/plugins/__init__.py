"""Built-in plugins, registered through the same door as third-party ones.

Each module here implements hooks from :mod:`cassette.hookspecs` with
``@hookimpl``. The plugin manager registers every module named in ``BUILTIN``.
"""

# pluggy calls the last registered first: OpenAI's provider, whose requests (and every
# OpenAI-compatible server's) are most of the traffic, is asked before Anthropic's. No request
# is claimed by both, so the order changes nothing else.
BUILTIN = [
    "cassette.plugins.providers.anthropic",
    "cassette.plugins.providers.openai",
    "cassette.plugins.providers.bedrock",
    "cassette.plugins.providers.mcp",
    "cassette.plugins.providers.http",
    "cassette.plugins.redact_default",
    "cassette.plugins.secret_rules",
    "cassette.plugins.semantic_lexical",
    "cassette.plugins.semantic_embeddings",
    "cassette.plugins.semantic_remote",
]
