"""What is a secret, decided once, and finding it.

- :mod:`~cassette.secrets.registry`: the secret *names* (headers, query parameters, cookies, JSON
  fields, tool arguments, dict keys) the recorder redacts and the scanner reads values under;
- :mod:`~cassette.secrets.formats`: the key *formats* (key patterns of services, generic shapes), the
  built-in rules (each provider plugin returns its own keys' formats);
- :mod:`~cassette.secrets.rules`: :class:`SecretRule`, fingerprints and masks;
- :mod:`~cassette.secrets.engine`: a rule list compiled for fast matching;
- :mod:`~cassette.secrets.scan`: the :class:`Scanner` of files (cassettes, blobs, traces, any text);
- :mod:`~cassette.secrets.redact`: redaction of text and of streamed responses;
- :mod:`~cassette.secrets.escapes`: text read with its JSON ``\\u`` escapes decoded (a key partly escaped);
- :mod:`~cassette.secrets.masking`: secrets masked in a message (a miss's diff), as a finding shows them;
- :mod:`~cassette.secrets.placeholders`: what redaction leaves, the key of a redacted request, and a
  redacted value spread through the rest of a recording.

This package imports no plugin: rules reach it as arguments (the caller asks its plugin manager,
:func:`rules_from_plugins`; ``cassette.plugins.manager.default_rules`` for the built-in ones).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cassette.secrets.redact import redact_stream, redact_text
    from cassette.secrets.rules import SecretRule, fingerprint, mask, rules_from_plugins, shannon_entropy
    from cassette.secrets.scan import DAMAGED_RULE, SCAN_VERSION, Finding, Scanner, store_reader

# Each name is imported from its module on first use: what needs only the registry of names (the
# seam's matching, a hook's drift) does not compile the scanner's rules.
_LAZY: dict[str, str] = {
    "DAMAGED_RULE": "cassette.secrets.scan",
    "Finding": "cassette.secrets.scan",
    "SCAN_VERSION": "cassette.secrets.scan",
    "Scanner": "cassette.secrets.scan",
    "SecretRule": "cassette.secrets.rules",
    "fingerprint": "cassette.secrets.rules",
    "mask": "cassette.secrets.rules",
    "redact_stream": "cassette.secrets.redact",
    "redact_text": "cassette.secrets.redact",
    "rules_from_plugins": "cassette.secrets.rules",
    "shannon_entropy": "cassette.secrets.rules",
    "store_reader": "cassette.secrets.scan",
}

__all__ = [
    "DAMAGED_RULE",
    "SCAN_VERSION",
    "Finding",
    "Scanner",
    "SecretRule",
    "fingerprint",
    "mask",
    "redact_stream",
    "redact_text",
    "rules_from_plugins",
    "shannon_entropy",
    "store_reader",
]


if not TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'cassette.secrets' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
