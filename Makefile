.PHONY: bench

# Benchmarks against the peers (installs them into .bench-venv/ by itself); see docs/benchmarks.md.
bench:
	python -m bench
