"""Built-in provider plugins: each owns one provider's request and response shapes and answers the
provider hooks in `cassette.hookspecs`."""

# The provider modules the plugin manager registers, in this order. pluggy calls the last
# registered first: OpenAI's provider, whose requests (and every OpenAI-compatible server's) are
# most of the traffic, is asked before Anthropic's. No request is claimed by both, so for requests
# the order changes nothing else; of their key formats (`cassette_secret_rules`), OpenAI's come
# first. The generic HTTP provider answers last whatever its place (`trylast`).
PROVIDERS = [
    "cassette.plugins.providers.gemini",
    "cassette.plugins.providers.anthropic",
    "cassette.plugins.providers.openai",
    "cassette.plugins.providers.bedrock",
    "cassette.plugins.providers.mcp",
    "cassette.plugins.providers.http",
]
