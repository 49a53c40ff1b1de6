"""Benchmarks of cassette against its peers: ``python -m bench`` (or ``make bench``).

The bench installs the peers (cendor-cassette, vcrpy with pytest-recording,
cassetter, detect-secrets) into its own virtual environment ``.bench-venv/``,
re-runs itself there, measures every workload side by side in one process, and
writes ``docs/benchmarks.md``. ``python -m bench --quick`` runs each workload at
a small size (the CI smoke test calls the same workload functions).

Each workload module exposes ``run(cfg: BenchConfig) -> Section``; see
:mod:`bench._harness` for the result types and :mod:`bench.__main__` for the
command line.
"""
