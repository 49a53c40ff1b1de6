"""``python -m bench._server --port N --seed S``: the devserver with TCP_NODELAY, in its own process."""

from __future__ import annotations

import argparse

from bench._data import no_delay_devserver


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    server = no_delay_devserver(args.seed, args.port)
    httpd = server._bind()
    print(f"devserver listening on {server.url}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
