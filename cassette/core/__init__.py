"""The model and the pure helpers everything else stands on: `Interaction` and `Cassette`, canonical JSON,
the JSON layout we write, SSE framing and the field diff. Imports nothing of ours but `cassette.errors`."""
