"""A support-triage agent: the OpenAI SDK, two tools, several LLM turns; its tests replay offline.

Run its tests (they replay from ``cassettes/``, no server and no API key needed)::

    python -m pytest examples/support_agent -q

Record them again against a model (a local one here)::

    python -m cassette.devserver --port 8765 &
    CASSETTE_MODE=record OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=sk-local \\
        python -m pytest examples/support_agent -q
"""
