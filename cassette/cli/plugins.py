"""``cassette plugins``: which plugins are loaded, where each came from, and which hooks it implements."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cassette.config import clear_config_cache, load_config
from cassette.plugins import BUILTIN
from cassette.plugins.manager import get_plugin_manager, reset_plugin_manager

HELP = "list loaded plugins (built-in, entry point `cassette`, [tool.cassette] plugins) and their hooks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def loaded_plugins() -> list[dict[str, Any]]:
    """``[{"name", "source", "hooks"}]`` for every plugin the manager holds, built-ins first.

    Example::

        [p["name"] for p in loaded_plugins()][:1]  # ["cassette.plugins.providers.<first by name>"]
    """
    clear_config_cache()
    reset_plugin_manager()  # read this project's config and the installed entry points afresh
    configured = set(load_config().plugins)
    pm = get_plugin_manager()
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    rows: list[dict[str, Any]] = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:  # blocked
            continue
        if name in BUILTIN:
            source = "built-in"
        elif id(plugin) in dists:
            dist = dists[id(plugin)]
            source = f"entry point ({dist.project_name} {dist.version})"
        elif name in configured:
            source = "[tool.cassette] plugins"
        else:
            source = "registered at run time"
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        rows.append({"name": name, "source": source, "hooks": hooks})
    rows.sort(key=lambda r: (r["source"] != "built-in", r["name"]))
    return rows


def run(args: argparse.Namespace) -> int:
    rows = loaded_plugins()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['name']}  [{row['source']}]")
        print(f"    hooks: {', '.join(row['hooks']) or '(none)'}")
    print(f"{len(rows)} plugin(s) loaded")
    return 0
