"""Keeping a cassette directory healthy: verify, gc and hygiene, promote a trace into a test."""
