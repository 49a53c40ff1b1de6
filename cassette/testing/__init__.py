"""Test support shipped with the package: the deterministic local provider server (`devserver`)."""
