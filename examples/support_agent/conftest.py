"""The agent under test, on an OpenAI client routed through cassette."""

from __future__ import annotations

import os
from typing import Any

import pytest
from openai import OpenAI

import cassette
from support_agent.agent import SupportAgent


@pytest.fixture(scope="session")
def openai_client() -> Any:
    # Replay needs no key, but the SDK refuses to start without one.
    return cassette.instrument(OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "no-key-needed-to-replay"))


@pytest.fixture
def agent(openai_client: Any) -> SupportAgent:
    return SupportAgent(openai_client)
