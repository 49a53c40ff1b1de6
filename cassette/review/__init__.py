"""Reading recorded runs: drift between two recordings, semantic match and drift, token usage."""
