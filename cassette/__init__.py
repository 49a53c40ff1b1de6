"""cassette."""
