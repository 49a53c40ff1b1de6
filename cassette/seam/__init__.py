"""Where a call meets cassette: the session and its modes, matching, recording, the HTTP transports, tool
capture, the trace, the network guard and the loopback proxy. Never names a provider: provider
knowledge comes from plugins."""
