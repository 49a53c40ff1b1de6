"""The built-in ``cassette_secret_rules`` plugin: the registry's key formats (``cassette.secrets.formats``).

Registered as any third-party plugin is; the scanner and the recorder's redaction receive these rules
through the hook, never by importing this module. They come last (``trylast``): the more specific
formats of the provider plugins (each returns its own keys) and of third-party plugins win an
overlap, as the registry's own list puts its most specific formats first.
"""

from __future__ import annotations

from cassette.hookspecs import hookimpl
from cassette.secrets.formats import RULES
from cassette.secrets.rules import SecretRule

__all__ = ["RULES", "cassette_secret_rules"]


@hookimpl(trylast=True)
def cassette_secret_rules() -> list[SecretRule]:
    """The built-in rules (see ``cassette.secrets.formats``)."""
    return list(RULES)
