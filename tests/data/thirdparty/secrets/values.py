# ruff: noqa: E501  (cassette text is kept line for line; its lines are as long as recorders write them)
"""The planted secrets: deterministic, valid-shaped and fake (no value was ever issued by a provider).

Each value is drawn from SHA-256 of ``cassette-corpus/<name>/<counter>``, so re-running
``make_labels.py`` writes the very same files. Provider checksums (GitHub's CRC32 tail, Stripe's
account prefix) are not computed: the values have the shape scanners look for and nothing more.
"""

from __future__ import annotations

import base64
import hashlib
import json
import string
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"
UPPER_B32 = string.ascii_uppercase + "234567"


def draw(name: str, n: int, alphabet: str = ALNUM) -> str:
    """``n`` characters of ``alphabet``, the same for the same ``name`` on every run."""
    out: list[str] = []
    counter = 0
    limit = 256 - 256 % len(alphabet)  # no modulo bias
    while len(out) < n:
        for byte in hashlib.sha256(f"cassette-corpus/{name}/{counter}".encode()).digest():
            if byte < limit and len(out) < n:
                out.append(alphabet[byte % len(alphabet)])
        counter += 1
    s = "".join(out)
    if alphabet in (ALNUM, B64URL, B64) and n >= 12:
        # real keys of these alphabets carry every class; make sure (deterministically) this one does
        s = "Qk7" + s[3:]
    return s


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(name: str, claims: dict[str, object]) -> str:
    header = {"alg": "RS256", "kid": draw(name + "/kid", 40, HEX), "typ": "JWT"}
    head = b64url(json.dumps(header, separators=(",", ":")).encode())
    body = b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{head}.{body}.{draw(name + '/sig', 342, B64URL)}"


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def express_sid(name: str) -> str:
    """An express-session cookie value as sent: ``s:<id>.<HMAC base64>``, URL-encoded."""
    sig = draw(name + "/sig", 43, B64)
    return quote(f"s:{draw(name, 32, B64URL)}.{sig}", safe="")


SPOTIFY_CLIENT_ID = draw("spotify-client-id", 32, HEX)
SPOTIFY_CLIENT_SECRET = draw("spotify-client-secret", 32, HEX)

V: dict[str, str] = {
    # OAuth
    "spotify_client_secret": SPOTIFY_CLIENT_SECRET,
    "spotify_basic": basic(SPOTIFY_CLIENT_ID, SPOTIFY_CLIENT_SECRET),
    "spotify_access_token": "BQ" + draw("spotify-access", 150, B64URL),
    "spotify_refresh_token": "AQ" + draw("spotify-refresh", 130, B64URL),
    "spotify_access_token_2": "BQ" + draw("spotify-access-2", 150, B64URL),
    "reddit_client_secret": draw("reddit-client-secret", 30, B64URL),
    "reddit_basic": basic("dkxlYzH2cX8kQw", draw("reddit-client-secret", 30, B64URL)),
    "reddit_password": "Tr0ub4dor&3-" + draw("reddit-password", 6),
    "reddit_access_token": "2815"
    + draw("reddit-access-digits", 8, "0123456789")
    + "-"
    + draw("reddit-access", 30, B64URL),
    "reddit_refresh_token": "2815"
    + draw("reddit-refresh-digits", 8, "0123456789")
    + "-"
    + draw("reddit-refresh", 30, B64URL),
    "reddit_session": "2815"
    + draw("reddit-session-digits", 8, "0123456789")
    + "%2C2024-05-01T10%3A11%3A12%2C"
    + draw("reddit-session", 40, HEX),
    "google_client_secret": "GOCSPX-" + draw("google-client-secret", 28, B64URL),
    "google_refresh_token": "1//0" + draw("google-refresh", 99, B64URL),
    "google_access_token": "ya29." + draw("google-access", 160, B64URL),
    "google_id_token": jwt(
        "google-id",
        {
            "iss": "https://accounts.google.com",
            "azp": "764086051850-corpus.apps.googleusercontent.com",
            "aud": "764086051850-corpus.apps.googleusercontent.com",
            "sub": "106568474315779212559",
            "email": "corpus@example.invalid",
            "iat": 1743410784,
            "exp": 1743414384,
        },
    ),
    "github_client_secret": draw("github-client-secret", 40, HEX),
    "github_oauth_basic": basic("744690bb800d5715ad90", draw("github-client-secret", 40, HEX)),
    "github_user_basic": basic("monalisaoctocat", "Qv9!" + draw("github-user-password", 14)),
    "github_pat": "ghp_" + draw("github-pat", 36),
    "github_oauth_token": "gho_" + draw("github-oauth", 36),
    "github_session": draw("github-gh-sess", 180, B64) + "--" + draw("github-gh-sess-mac", 40, HEX),
    "github_user_session": draw("github-user-session", 48, B64URL),
    "slack_bot_token": f"xoxb-{draw('slack-bot-a', 12, '0123456789')}-{draw('slack-bot-b', 13, '0123456789')}-{draw('slack-bot', 24)}",
    "slack_user_token": f"xoxp-{draw('slack-user-a', 12, '0123456789')}-{draw('slack-user-b', 12, '0123456789')}-{draw('slack-user-c', 13, '0123456789')}-{draw('slack-user', 32, HEX)}",
    "slack_d_cookie": "xoxd-" + quote(draw("slack-d", 120, B64) + "==", safe=""),
    "facebook_token": "EAAG" + draw("facebook-token", 180),
    "facebook_app_secret": draw("facebook-app-secret", 32, HEX),
    # provider keys
    "openai_key": "sk-proj-" + draw("openai-a", 74, B64URL) + "T3BlbkFJ" + draw("openai-b", 74, B64URL),
    "openai_key_2": "sk-proj-" + draw("openai-c", 74, B64URL) + "T3BlbkFJ" + draw("openai-d", 74, B64URL),
    "anthropic_key": "sk-ant-api03-" + draw("anthropic", 93, B64URL) + "AA",
    "anthropic_key_2": "sk-ant-api03-" + draw("anthropic-2", 93, B64URL) + "AA",
    "google_api_key": "AIza" + draw("google-api-key", 35, B64URL),
    "aws_access_key_id": "AKIA" + draw("aws-id", 16, UPPER_B32),
    "aws_secret_access_key": draw("aws-secret", 40, B64),
    "aws_temp_key_id": "ASIA" + draw("aws-temp-id", 16, UPPER_B32),
    "aws_session_token": "IQoJb3JpZ2luX2VjE" + draw("aws-session", 420, B64) + "==",
    "stripe_live_key": "sk_live_51" + draw("stripe-live", 97),
    "stripe_restricted_key": "rk_live_51" + draw("stripe-restricted", 97),
    "jwt_session": jwt(
        "app-jwt", {"sub": "user_2f9", "sid": "sess_91", "iat": 1714557072, "exp": 1714560672}
    ),
    # sessions and passwords
    "connect_sid": express_sid("connect-sid"),
    "app_sid": express_sid("app-sid"),
    "rails_session_id": draw("rails-session-id", 32, HEX),
    "rails_cookie_store": quote(draw("rails-cookie", 160, B64) + "==", safe="")
    + "--"
    + draw("rails-mac", 40, HEX),
    "jsessionid": draw("jsessionid", 32, HEX).upper(),
    "django_sessionid": draw("django-sessionid", 32, string.ascii_lowercase + string.digits),
    "httpbin_password": "pR7#" + draw("httpbin-password", 12),
    "httpbin_basic": basic("alice", "pR7#" + draw("httpbin-password", 12)),
    "db_url_password": draw("db-url-password", 20),
    "smtp_password": "Mx" + draw("smtp-password", 14) + "!9",
    "slack_client_secret": draw("slack-client-secret", 32, HEX),
    "slack_refresh_token": "xoxe-1-" + draw("slack-refresh", 140),
    "slack_rotated_bot_token": "xoxe.xoxb-1-" + draw("slack-rotated", 120),
    "jenkins_basic": basic("admin", "11" + draw("jenkins-api-token", 32, HEX)),
    "clerk_session_jwt": jwt(
        "clerk",
        {
            "azp": "https://app.example.invalid",
            "sid": "sess_2f",
            "sub": "user_2f",
            "iat": 1714557072,
            "exp": 1714557132,
        },
    ),
}

# the rspotify client id is public (it names the app); kept here so templates can use it
PUBLIC = {"spotify_client_id": SPOTIFY_CLIENT_ID}
