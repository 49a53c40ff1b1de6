"""Sources of inner pytest suites (pytester) shared by the plugin's first-hour and scale tests."""

from __future__ import annotations

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_default_fixture_loop_scope = "function"
"""

# An agent's one LLM call through an instrumented OpenAI client on the outer test's devserver. No
# api_key is passed: the tests set OPENAI_API_KEY, or check the plugin's placeholder credentials.
ASK = """
import os
import pytest
import cassette
from openai import OpenAI

def ask(text):
    client = cassette.instrument(OpenAI(base_url=os.environ["DEVSERVER_URL"] + "/v1", max_retries=0))
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content
"""
