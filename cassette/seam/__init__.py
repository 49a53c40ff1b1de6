"""Where a call meets cassette: the session and its modes, matching, recording, the HTTP transports, tool
capture, the trace and the network guard. Never names a provider: provider knowledge comes from plugins."""
