# ruff: noqa: E501  (cassette text is kept line for line; its lines are as long as recorders write them)
"""The corpus: one :class:`Spec` per cassette (template, planted secrets, labelled negatives)."""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field

from values import draw


@dataclass
class Spec:
    name: str
    source: str
    licence: str
    planted: str
    template: str
    # placeholder name -> (kind, where)
    secrets: dict[str, tuple[str, str]] = field(default_factory=dict)
    # literal value in the file -> what it is (must not be a finding)
    negatives: dict[str, str] = field(default_factory=dict)
    blobs: dict[str, str] = field(default_factory=dict)
    gzip: bool = False


def embedding_b64(seed: str, n: int) -> str:
    """A base64 float32 vector like OpenAI's ``encoding_format=base64`` (values from the seed)."""
    digits = draw(seed, n * 4, "0123456789")
    floats = [(int(digits[i : i + 4]) - 5000) / 150000 for i in range(0, len(digits), 4)]
    return base64.b64encode(struct.pack(f"<{n}f", *floats)).decode()


RSPOTIFY = "guilhermesad/rspotify: spec/vcr_cassettes/"
SLACK = "slack-ruby/slack-ruby-client: spec/fixtures/slack/web/"
OCTOKIT = "octokit/octokit.rb: spec/cassettes/Octokit_Client_Authorizations/"
PYDANTIC = "pydantic/pydantic-ai: tests/models/cassettes/"
PRAW = "praw-dev/praw: tests/integration/cassettes/"
VCRPY = "kevin1024/vcrpy: tests/fixtures/migration/"
CSP = (
    "'default-src ''self''; script-src ''self'' https://d2d1dxiu3v1f2i.cloudfront.net\n"
    "        https://www.google-analytics.com; frame-src ''self'' https://www.spotify.com;'"
)

SPECS: list[Spec] = []

# --------------------------------------------------------------------------- Ruby VCR (YAML)

SPECS.append(
    Spec(
        name="rspotify_client_credentials.yml",
        source=RSPOTIFY + "authenticate_client.yml",
        licence="MIT",
        planted="client id:secret in the URL, the same as `Authorization: Basic`; the gzip `!binary` "
        "token body replaced by the OAuth JSON as a YAML string",
        template=f"""---
http_interactions:
- request:
    method: post
    uri: https://«spotify_client_id»:«spotify_client_secret»@accounts.spotify.com/api/token
    body:
      encoding: US-ASCII
      string: grant_type=client_credentials
    headers:
      accept:
      - "*/*; q=0.5, application/xml"
      accept-encoding:
      - gzip, deflate
      authorization:
      - Basic «spotify_basic»
      content-length:
      - '29'
      content-type:
      - application/x-www-form-urlencoded
      user-agent:
      - Ruby
  response:
    status:
      code: 200
      message: OK
    headers:
      server:
      - nginx
      date:
      - Sat, 22 Nov 2014 00:55:48 GMT
      content-type:
      - application/json
      content-security-policy:
      - {CSP}
      cache-control:
      - ": no-cache, no-store, must-revalidate"
    body:
      encoding: UTF-8
      string: '{{"access_token":"«spotify_access_token»","token_type":"bearer","expires_in":3600}}'
    http_version: '1.1'
  recorded_at: Sat, 22 Nov 2014 00:55:48 GMT
recorded_with: VCR 2.9.3
""",
        secrets={
            "spotify_client_secret": ("url_password", "request uri userinfo (client_id:client_secret@)"),
            "spotify_basic": ("basic_auth", "header authorization: Basic"),
            "spotify_access_token": ("oauth_access_token", "yaml string holding the token JSON"),
        },
        negatives={
            "d2d1dxiu3v1f2i": "cloudfront distribution id",
            "Sat, 22 Nov 2014 00:55:48 GMT": "timestamp",
        },
    )
)

SPECS.append(
    Spec(
        name="rspotify_refresh_token_form.yml",
        source=RSPOTIFY + "authenticate_5ac1cda2ad354aeaa1ad2693d33bb98c.yml",
        licence="MIT",
        planted="refresh grant as a form body (`refresh_token=…&client_secret=…`); token JSON with "
        "access and refresh token as a YAML string",
        template="""---
http_interactions:
- request:
    method: post
    uri: https://accounts.spotify.com/api/token
    body:
      encoding: US-ASCII
      string: grant_type=refresh_token&refresh_token=«spotify_refresh_token»&client_id=«spotify_client_id»&client_secret=«spotify_client_secret»
    headers:
      accept:
      - '*/*; q=0.5, application/xml'
      accept-encoding:
      - gzip, deflate
      content-type:
      - application/x-www-form-urlencoded
      user-agent:
      - Ruby
  response:
    status:
      code: 200
      message: OK
    headers:
      server:
      - nginx
      date:
      - Fri, 15 Aug 2014 19:54:58 GMT
      content-type:
      - application/json
      x-frame-options:
      - deny
    body:
      encoding: UTF-8
      string: '{"access_token":"«spotify_access_token_2»","token_type":"Bearer","expires_in":3600,"refresh_token":"«spotify_refresh_token»","scope":"user-read-private
        playlist-modify-public"}'
    http_version: '1.1'
  recorded_at: Fri, 15 Aug 2014 19:54:58 GMT
recorded_with: VCR 2.8.0
""",
        secrets={
            "spotify_refresh_token": ("oauth_refresh_token", "form body refresh_token= and the token JSON"),
            "spotify_client_secret": ("oauth_client_secret", "form body client_secret="),
            "spotify_access_token_2": ("oauth_access_token", "yaml string holding the token JSON"),
        },
        negatives={"«spotify_client_id»": "OAuth client id (public)"},
    )
)

SPECS.append(
    Spec(
        name="rspotify_me_bearer_query.yml",
        source=RSPOTIFY + "authenticate_client.yml (request/response frame)",
        licence="MIT",
        planted="`authorization: Bearer` header on an API call; a Facebook-style `?access_token=` "
        "and `appsecret_proof` query on a second",
        template="""---
http_interactions:
- request:
    method: get
    uri: https://api.spotify.com/v1/me
    body:
      encoding: US-ASCII
      string: ''
    headers:
      accept:
      - "*/*; q=0.5, application/xml"
      authorization:
      - Bearer «spotify_access_token»
      user-agent:
      - Ruby
  response:
    status:
      code: 200
      message: OK
    headers:
      content-type:
      - application/json; charset=utf-8
      etag:
      - W/"a1b1c9f6c4e1d3b8e4a2f7c0d9e8b7a6"
    body:
      encoding: UTF-8
      string: '{"country":"SE","display_name":"wizzler","id":"wizzler","type":"user","uri":"spotify:user:wizzler"}'
    http_version: '1.1'
  recorded_at: Sat, 22 Nov 2014 00:55:49 GMT
- request:
    method: get
    uri: https://graph.facebook.com/v19.0/me?access_token=«facebook_token»&appsecret_proof=3f9c1a2b7e4d5c6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f
    body:
      encoding: US-ASCII
      string: ''
    headers:
      user-agent:
      - Ruby
  response:
    status:
      code: 200
      message: OK
    headers:
      x-fb-trace-id:
      - GzK1f7xRk2B
      x-fb-request-id:
      - AbCdEfGhIjKlMnOpQrStUvWx
    body:
      encoding: UTF-8
      string: '{"name":"Corpus User","id":"10160000000000001"}'
    http_version: '1.1'
  recorded_at: Sat, 22 Nov 2014 00:55:50 GMT
recorded_with: VCR 2.9.3
""",
        secrets={
            "spotify_access_token": ("bearer_token", "header authorization: Bearer"),
            "facebook_token": ("oauth_access_token", "query string access_token="),
        },
        negatives={
            'W/"a1b1c9f6c4e1d3b8e4a2f7c0d9e8b7a6"': "etag",
            "3f9c1a2b7e4d5c6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f": "appsecret_proof (HMAC-SHA256 hex)",
            "AbCdEfGhIjKlMnOpQrStUvWx": "request id",
        },
    )
)

SLACK_HEADERS = """      Date:
      - Sat, 04 Dec 2021 20:13:19 GMT
      Server:
      - Apache
      X-Oauth-Scopes:
      - identify,read,post,client,apps
      X-Slack-Req-Id:
      - cf2877c6fab8f3aa7747f2e07d0b5fd5
      Content-Type:
      - application/json; charset=utf-8
      X-Slack-Shared-Secret-Outcome:
      - no-match
      X-Slack-Edge-Shared-Secret-Outcome:
      - no-match
"""

SPECS.append(
    Spec(
        name="slack_rtm_connect_form_token.yml",
        source=SLACK + "rtm_connect.yml (first interaction)",
        licence="MIT",
        planted="bot token as the form body `token=xoxb-…`",
        template="""---
http_interactions:
- request:
    method: post
    uri: https://slack.com/api/rtm.connect
    body:
      encoding: UTF-8
      string: token=«slack_bot_token»
    headers:
      Accept:
      - application/json; charset=utf-8
      User-Agent:
      - Slack Ruby Client/0.18.0
      Content-Type:
      - application/x-www-form-urlencoded
  response:
    status:
      code: 200
      message: OK
    headers:
"""
        + SLACK_HEADERS
        + """    body:
      encoding: UTF-8
      string: '{"ok":true,"url":"wss:\\/\\/cerberus-xxxx.lb.slack-msgs.com\\/websocket\\/uid","team":{"id":"T04KB5WQH","name":"dblock","domain":"dblockdotorg"},"self":{"id":"U0J1GAHN1","name":"travis-ci"}}'
  recorded_at: Sat, 19 Jan 2019 21:25:48 GMT
recorded_with: VCR 6.0.0
""",
        secrets={"slack_bot_token": ("slack_token", "form body token=")},
        negatives={"cf2877c6fab8f3aa7747f2e07d0b5fd5": "X-Slack-Req-Id", "T04KB5WQH": "team id"},
    )
)

SPECS.append(
    Spec(
        name="slack_auth_test_cookie_bearer.yml",
        source=SLACK + "auth_test_success.yml",
        licence="MIT",
        planted="browser-session `Cookie: d=xoxd-…` and `Authorization: Bearer xoxp-…`",
        template="""---
http_interactions:
- request:
    method: post
    uri: https://slack.com/api/auth.test
    body:
      encoding: UTF-8
      string: ''
    headers:
      Accept:
      - application/json; charset=utf-8
      User-Agent:
      - Slack Ruby Client/0.18.0
      Authorization:
      - Bearer «slack_user_token»
      Cookie:
      - d=«slack_d_cookie»; d-s=1638648799; lc=1638648799
      Content-Type:
      - application/x-www-form-urlencoded
  response:
    status:
      code: 200
      message: OK
    headers:
"""
        + SLACK_HEADERS
        + """    body:
      encoding: UTF-8
      string: '{"ok":true,"url":"https:\\/\\/rubybot.slack.com\\/","team":"team_name","user":"user_name","team_id":"TDEADBEEF","user_id":"UBAADFOOD","bot_id":"B0J1L75DY","is_enterprise_install":false}'
  recorded_at: Sat, 19 Jan 2019 21:25:48 GMT
recorded_with: VCR 6.0.0
""",
        secrets={
            "slack_user_token": ("slack_token", "header Authorization: Bearer"),
            "slack_d_cookie": ("session_cookie", "header Cookie d="),
        },
        negatives={"cf2877c6fab8f3aa7747f2e07d0b5fd5": "X-Slack-Req-Id", "1638648799": "timestamp"},
    )
)

SPECS.append(
    Spec(
        name="slack_oauth_v2_refresh.yml",
        source=SLACK + "auth_test_success.yml (frame)",
        licence="MIT",
        planted="token rotation: form body `client_secret=…&refresh_token=xoxe-1-…`, response JSON "
        "with the rotated `xoxe.xoxb-1-…` access token and a new refresh token",
        template="""---
http_interactions:
- request:
    method: post
    uri: https://slack.com/api/oauth.v2.access
    body:
      encoding: UTF-8
      string: client_id=4438660123.5126619384&client_secret=«slack_client_secret»&grant_type=refresh_token&refresh_token=«slack_refresh_token»
    headers:
      Accept:
      - application/json; charset=utf-8
      Content-Type:
      - application/x-www-form-urlencoded
  response:
    status:
      code: 200
      message: OK
    headers:
"""
        + SLACK_HEADERS
        + """    body:
      encoding: UTF-8
      string: '{"ok":true,"app_id":"A0KRD7HC3","access_token":"«slack_rotated_bot_token»","expires_in":43200,"refresh_token":"«slack_refresh_token»","token_type":"bot","team":{"id":"T9TK3CUKW","name":"Slack Softball Team"}}'
  recorded_at: Sat, 19 Jan 2019 21:25:48 GMT
recorded_with: VCR 6.0.0
""",
        secrets={
            "slack_client_secret": ("oauth_client_secret", "form body client_secret="),
            "slack_refresh_token": ("oauth_refresh_token", "form body and the token JSON"),
            "slack_rotated_bot_token": ("oauth_access_token", "yaml string holding the token JSON"),
        },
        negatives={"4438660123.5126619384": "OAuth client id", "A0KRD7HC3": "app id"},
    )
)

SPECS.append(
    Spec(
        name="rails_session_cookies.yml",
        source=SLACK + "auth_test_success.yml (frame; a Rails app's response headers)",
        licence="MIT",
        planted="`Set-Cookie: _session_id=…` and a cookie-store `_corpus_app_session=…--…`, sent back "
        "as `Cookie`",
        template="""---
http_interactions:
- request:
    method: post
    uri: http://localhost:3000/users/sign_in
    body:
      encoding: UTF-8
      string: user%5Bemail%5D=corpus%40example.invalid&user%5Bpassword%5D=«smtp_password»&commit=Log+in
    headers:
      Content-Type:
      - application/x-www-form-urlencoded
  response:
    status:
      code: 302
      message: Found
    headers:
      Location:
      - http://localhost:3000/
      Set-Cookie:
      - _session_id=«rails_session_id»; path=/; HttpOnly
      - _corpus_app_session=«rails_cookie_store»; path=/; HttpOnly; SameSite=Lax
      X-Request-Id:
      - 0b7c3d6e-8a41-4f0e-9b2d-5c1e7f3a9d04
      X-Runtime:
      - '0.048213'
    body:
      encoding: UTF-8
      string: <html><body>You are being <a href="http://localhost:3000/">redirected</a>.</body></html>
  recorded_at: Sat, 19 Jan 2019 21:25:48 GMT
- request:
    method: get
    uri: http://localhost:3000/
    body:
      encoding: US-ASCII
      string: ''
    headers:
      Cookie:
      - _session_id=«rails_session_id»; _corpus_app_session=«rails_cookie_store»
  response:
    status:
      code: 200
      message: OK
    headers:
      Etag:
      - W/"5f0c0a1e9d2b4c7e8f6a3b1d0e9c8b7a"
      X-Request-Id:
      - 7e2a9c41-3b5d-4f8e-a6c0-1d9b2e4f7a35
    body:
      encoding: UTF-8
      string: <html><body>Signed in</body></html>
  recorded_at: Sat, 19 Jan 2019 21:25:49 GMT
recorded_with: VCR 6.0.0
""",
        secrets={
            "smtp_password": ("password", "form body user[password]="),
            "rails_session_id": ("session_cookie", "header Set-Cookie / Cookie _session_id="),
            "rails_cookie_store": ("session_cookie", "header Set-Cookie / Cookie _<app>_session="),
        },
        negatives={
            "0b7c3d6e-8a41-4f0e-9b2d-5c1e7f3a9d04": "request id (uuid)",
            'W/"5f0c0a1e9d2b4c7e8f6a3b1d0e9c8b7a"': "etag",
            "0.048213": "runtime",
        },
    )
)

# --------------------------------------------------------------------------- Ruby VCR (JSON serializer)

GH_RESPONSE_HEADERS = (
    '"Server":["GitHub.com"],"Date":["Sun, 30 Sep 2018 19:47:19 GMT"],'
    '"Content-Type":["application/json; charset=utf-8"],"X-Ratelimit-Limit":["5000"],'
    '"Etag":["\\"019ff4c4d606051fa13f7d999d883be2\\""],'
    '"X-Github-Request-Id":["FD93:235B:2341AB0:41EADD7:5BB12846"]'
)

SPECS.append(
    Spec(
        name="octokit_reset_token.json",
        source=OCTOKIT + "_reset_application_authorization/resets_a_token.json",
        licence="MIT",
        planted="`Authorization: Basic` (user:password, then client_id:client_secret); the new token "
        "inside the base64 response body; `access_token` in the JSON request body",
        template='{"http_interactions":[{"request":{"method":"put","uri":"https://api.github.com/authorizations/clients/744690bb800d5715ad90/RESET","body":{"encoding":"UTF-8","base64_string":"e30=\\n"},"headers":{"Accept":["application/vnd.github.v3+json"],"User-Agent":["Octokit Ruby Gem 4.12.0"],"Content-Type":["application/json"],"Authorization":["Basic «github_user_basic»"]}},"response":{"status":{"code":201,"message":"Created"},"headers":{'
        + GH_RESPONSE_HEADERS
        + '},"body":{"encoding":"UTF-8","base64_string":"«b64n:created»"},"http_version":null},"recorded_at":"Sun, 30 Sep 2018 19:47:19 GMT"},{"request":{"method":"patch","uri":"https://api.github.com/applications/744690bb800d5715ad90/tokens","body":{"access_token":"«github_oauth_token»", "encoding":"UTF-8","base64_string":"e30=\\n"},"headers":{"Accept":["application/vnd.github.v3+json"],"Content-Type":["application/json"],"Authorization":["Basic «github_oauth_basic»"]}},"response":{"status":{"code":200,"message":"OK"},"headers":{'
        + GH_RESPONSE_HEADERS
        + '},"body":{"encoding":"ASCII-8BIT","base64_string":"e30=\\n"},"http_version":null},"recorded_at":"Sun, 30 Sep 2018 19:47:19 GMT"}],"recorded_with":"VCR 4.0.0"}\n',
        blobs={
            "created": '{"id":223759433,"url":"https://api.github.com/authorizations/223759433",'
            '"token":"«github_oauth_token»","hashed_token":'
            '"d8de81b85bccf94f1714191ee75c7fc06547d6ebc6ac8d2a108fa0b20aacf986","token_last_eight":"40f2d4d8"}'
        },
        secrets={
            "github_user_basic": ("basic_auth", "header Authorization: Basic (user:password)"),
            "github_oauth_basic": ("basic_auth", "header Authorization: Basic (client_id:client_secret)"),
            "github_oauth_token": (
                "github_token",
                "json request body access_token (and base64 response body)",
            ),
        },
        negatives={
            "019ff4c4d606051fa13f7d999d883be2": "etag",
            "FD93:235B:2341AB0:41EADD7:5BB12846": "request id",
            "744690bb800d5715ad90": "OAuth client id",
        },
    )
)

SPECS.append(
    Spec(
        name="octokit_token_header_session.json",
        source=OCTOKIT + "_scopes/checks_the_scopes_on_the_current_token.json (frame)",
        licence="MIT",
        planted="`Authorization: token ghp_…`; `Set-Cookie` `_gh_sess` and `user_session`",
        template='{"http_interactions":[{"request":{"method":"get","uri":"https://api.github.com/user","body":{"encoding":"US-ASCII","base64_string":""},"headers":{"Accept":["application/vnd.github.v3+json"],"User-Agent":["Octokit Ruby Gem 4.12.0"],"Authorization":["token «github_pat»"]}},"response":{"status":{"code":200,"message":"OK"},"headers":{'
        + GH_RESPONSE_HEADERS
        + ',"Set-Cookie":["_gh_sess=«github_session»; path=/; secure; HttpOnly; SameSite=Lax","user_session=«github_user_session»; path=/; expires=Sun, 14 Oct 2018 19:47:19 GMT; secure; HttpOnly; SameSite=Lax","logged_in=yes; domain=.github.com; path=/; secure; HttpOnly"],"X-Oauth-Scopes":["repo, user"]},"body":{"encoding":"UTF-8","base64_string":"«b64n:user»"},"http_version":null},"recorded_at":"Sun, 30 Sep 2018 19:47:19 GMT"}],"recorded_with":"VCR 4.0.0"}\n',
        blobs={"user": '{"login":"api-padawan","id":10137,"node_id":"MDQ6VXNlcjEwMTM3","type":"User"}'},
        secrets={
            "github_pat": ("github_token", "header Authorization: token"),
            "github_session": ("session_cookie", "header Set-Cookie _gh_sess="),
            "github_user_session": ("session_cookie", "header Set-Cookie user_session="),
        },
        negatives={
            "019ff4c4d606051fa13f7d999d883be2": "etag",
            "FD93:235B:2341AB0:41EADD7:5BB12846": "request id",
        },
    )
)

SPECS.append(
    Spec(
        name="octokit_no_secret.json",
        source=OCTOKIT + "_reset_application_authorization/resets_a_token.json (scrubbed as published)",
        licence="MIT",
        planted="nothing: placeholders, etags, a sha256 `hashed_token` in plain JSON",
        template='{"http_interactions":[{"request":{"method":"get","uri":"https://api.github.com/authorizations/223759433","body":{"encoding":"US-ASCII","base64_string":""},"headers":{"Accept":["application/vnd.github.v3+json"],"Authorization":["Basic <GITHUB_CLIENT_ID>:<GITHUB_CLIENT_SECRET>"]}},"response":{"status":{"code":200,"message":"OK"},"headers":{'
        + GH_RESPONSE_HEADERS
        + '},"body":{"encoding":"UTF-8","string":"{\\"id\\":223759433,\\"token\\":\\"\\",\\"hashed_token\\":\\"991854e796c02fd57b7103a0736e1031219e097ba7c4598ea5cb140ad816117a\\",\\"token_last_eight\\":\\"d11b8c55\\",\\"fingerprint\\":\\"RESET_APPLICATION_AUTHORIZATION_FINGERPRINT\\"}"},"http_version":null},"recorded_at":"Sun, 30 Sep 2018 19:47:19 GMT"}],"recorded_with":"VCR 4.0.0"}\n',
        negatives={
            "991854e796c02fd57b7103a0736e1031219e097ba7c4598ea5cb140ad816117a": "sha256 hex (hashed_token)",
            "<GITHUB_CLIENT_SECRET>": "placeholder",
            "RESET_APPLICATION_AUTHORIZATION_FINGERPRINT": "placeholder",
            "019ff4c4d606051fa13f7d999d883be2": "etag",
        },
    )
)

# --------------------------------------------------------------------------- pydantic-ai (cassetter typed body)

OPENAI_RESPONSE = """  response:
    status: 200
    headers:
      openai-organization:
      - pydantic-28gund
      openai-version:
      - 2020-10-01
      x-request-id:
      - req_8d6f2b1c9a7e4f3b0c5d1e2a9b8c7d6e
      content-type:
      - application/json
    body:
      type: json
      content:
        choices:
        - finish_reason: stop
          index: 0
          logprobs: null
          message:
            annotations: []
            content: The capital of France is Paris.
            refusal: null
            role: assistant
        created: 1744043456
        id: chatcmpl-BJjf61mLb9z5H45ClJzbx0UWKwjo1
        model: gpt-4o-2024-08-06
        object: chat.completion
        service_tier: default
        system_fingerprint: fp_898ac29719
        usage:
          completion_tokens: 8
          prompt_tokens: 24
          total_tokens: 32
  recorded_at: 2026-03-06T19:22:51.849479+00:00
"""
OPENAI_NEGATIVES = {
    "chatcmpl-BJjf61mLb9z5H45ClJzbx0UWKwjo1": "completion id",
    "fp_898ac29719": "system fingerprint",
    "req_8d6f2b1c9a7e4f3b0c5d1e2a9b8c7d6e": "request id",
}

SPECS.append(
    Spec(
        name="pydantic_ai_openai_bearer.yaml",
        source=PYDANTIC + "test_openai/test_extra_headers.yaml",
        licence="MIT",
        planted="`authorization: Bearer sk-proj-…` request header (the filter_headers step skipped)",
        template="""version: 1
interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers:
      host:
      - api.openai.com
      authorization:
      - Bearer «openai_key»
      xProxy-Limit-IDs:
      - monthly_budget
      content-type:
      - application/json
    body:
      type: json
      content:
        messages:
        - content: What is the capital of France?
          role: user
        model: gpt-4o
        n: 1
        stream: false
"""
        + OPENAI_RESPONSE,
        secrets={"openai_key": ("openai_api_key", "header authorization: Bearer")},
        negatives=OPENAI_NEGATIVES,
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_openai_env_in_tool_result.yaml",
        source=PYDANTIC + "test_openai/test_openai_instructions.yaml",
        licence="MIT",
        planted="a tool result holding a `.env` dump: OpenAI key, Stripe live key, a database URL "
        "with a password, a Slack bot token",
        template="""version: 1
interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers:
      host:
      - api.openai.com
      content-type:
      - application/json
    body:
      type: json
      content:
        messages:
        - content: You are a helpful assistant.
          role: system
        - content: Why does the deploy fail?
          role: user
        - content: null
          role: assistant
          tool_calls:
          - function:
              arguments: '{"path":".env"}'
              name: read_file
            id: call_Q2b7kLm9TzX4
            type: function
        - content: |-
            OPENAI_API_KEY=«openai_key_2»
            STRIPE_SECRET_KEY=«stripe_live_key»
            DATABASE_URL=postgres://app:«db_url_password»@db.internal:5432/app
            SLACK_BOT_TOKEN=«slack_bot_token»
            LOG_LEVEL=debug
          role: tool
          tool_call_id: call_Q2b7kLm9TzX4
        model: gpt-4o
        n: 1
        stream: false
"""
        + OPENAI_RESPONSE,
        secrets={
            "openai_key_2": ("openai_api_key", "json body, tool message content (.env line)"),
            "stripe_live_key": ("stripe_key", "json body, tool message content (.env line)"),
            "db_url_password": ("url_password", "json body, postgres:// URL in a tool message"),
            "slack_bot_token": ("slack_token", "json body, tool message content (.env line)"),
        },
        negatives={**OPENAI_NEGATIVES, "call_Q2b7kLm9TzX4": "tool call id"},
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_anthropic_x_api_key.yaml",
        source=PYDANTIC + "test_anthropic/test_anthropic_model_usage_limit_exceeded.yaml",
        licence="MIT",
        planted="`x-api-key: sk-ant-api03-…AA` request header",
        template="""version: 1
interactions:
- request:
    method: POST
    uri: https://api.anthropic.com/v1/messages/count_tokens?beta=true
    headers:
      connection:
      - keep-alive
      content-type:
      - application/json
      x-api-key:
      - «anthropic_key»
      anthropic-version:
      - '2023-06-01'
      host:
      - api.anthropic.com
    body:
      type: json
      content:
        messages:
        - content:
          - text: The quick brown fox jumps over the lazydog.
            type: text
          role: user
        model: claude-sonnet-4-5
  response:
    status: 200
    headers:
      request-id:
      - req_011CTXq8m2ZbV9kPnD4hJ7sR
      anthropic-organization-id:
      - 4f1c2a7e-9b3d-4e8f-a6c1-2d0b9e7f5a33
      content-type:
      - application/json
    body:
      type: json
      content:
        input_tokens: 19
  recorded_at: 2026-03-06T19:24:49.850659+00:00
""",
        secrets={"anthropic_key": ("anthropic_api_key", "header x-api-key")},
        negatives={
            "req_011CTXq8m2ZbV9kPnD4hJ7sR": "request id",
            "4f1c2a7e-9b3d-4e8f-a6c1-2d0b9e7f5a33": "organization id (uuid)",
        },
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_openai_ids_only.yaml",
        source=PYDANTIC + "test_openai/test_openai_instructions.yaml",
        licence="MIT",
        planted="nothing (ids only)",
        template="""version: 1
interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers:
      host:
      - api.openai.com
      content-type:
      - application/json
    body:
      type: json
      content:
        messages:
        - content: You are a helpful assistant.
          role: system
        - content: What is the capital of France?
          role: user
        model: gpt-4o
        n: 1
        stream: false
"""
        + OPENAI_RESPONSE,
        negatives=OPENAI_NEGATIVES,
    )
)

EMBEDDING = embedding_b64("embedding", 96)

SPECS.append(
    Spec(
        name="pydantic_ai_openai_embedding_base64.yaml",
        source=PYDANTIC + "test_openai/test_openai_instructions.yaml (frame; vector synthesized)",
        licence="MIT",
        planted="nothing: a base64 float32 embedding, request and project ids",
        template="""version: 1
interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/embeddings
    headers:
      host:
      - api.openai.com
      content-type:
      - application/json
    body:
      type: json
      content:
        encoding_format: base64
        input: The capital of France is Paris.
        model: text-embedding-3-small
  response:
    status: 200
    headers:
      openai-project:
      - proj_Yb3kQ9mT2xW7vLc4R8nZ1pDs
      x-request-id:
      - req_0c7e1f9a2b4d6e8f1a3c5e7b9d0f2a4c
      openai-model:
      - text-embedding-3-small
    body:
      type: json
      content:
        data:
        - embedding: """
        + EMBEDDING
        + """
          index: 0
          object: embedding
        model: text-embedding-3-small
        object: list
        usage:
          prompt_tokens: 7
          total_tokens: 7
  recorded_at: 2026-03-06T19:22:52.117023+00:00
""",
        negatives={
            EMBEDDING: "base64 embedding",
            "proj_Yb3kQ9mT2xW7vLc4R8nZ1pDs": "project id",
            "req_0c7e1f9a2b4d6e8f1a3c5e7b9d0f2a4c": "request id",
        },
    )
)

# --------------------------------------------------------------------------- pydantic-ai (parsed_body)

SPECS.append(
    Spec(
        name="pydantic_ai_gemini_query_key.yaml",
        source=PYDANTIC + "test_gemini/test_gemini_model_instructions.yaml",
        licence="MIT",
        planted="`?key=AIza…` in the request URI and the same key in `x-goog-api-key`",
        template="""interactions:
- request:
    headers:
      accept:
      - '*/*'
      content-type:
      - application/json
      host:
      - generativelanguage.googleapis.com
      x-goog-api-key:
      - «google_api_key»
    method: POST
    parsed_body:
      contents:
      - parts:
        - text: What is the capital of France?
        role: user
      systemInstruction:
        parts:
        - text: You are a helpful assistant.
        role: user
    uri: https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent?key=«google_api_key»
  response:
    headers:
      content-type:
      - application/json; charset=UTF-8
      server-timing:
      - gfet4t7; dur=1059
    parsed_body:
      candidates:
      - content:
          parts:
          - text: The capital of France is Paris.
          role: model
        finishReason: STOP
        index: 0
      modelVersion: gemini-2.5-flash
      responseId: bzZ8aZvANc-zmtkPltOn-Ag
      usageMetadata:
        candidatesTokenCount: 7
        promptTokenCount: 15
        totalTokenCount: 44
    status:
      code: 200
      message: OK
version: 1
""",
        secrets={"google_api_key": ("google_api_key", "uri query key= and header x-goog-api-key")},
        negatives={"bzZ8aZvANc-zmtkPltOn-Ag": "response id", "gfet4t7; dur=1059": "server timing"},
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_vertex_oauth_refresh.yaml",
        source=PYDANTIC + "test_gemini/test_vertexai_provider.yaml",
        licence="MIT",
        planted="the scrubbed refresh grant filled in (`client_secret=GOCSPX-…`, `refresh_token=1//0…`), "
        "`access_token: ya29.…` and a synthetic `id_token` JWT in parsed_body, then "
        "`authorization: Bearer ya29.…`",
        template="""interactions:
- request:
    body: grant_type=%5B%27refresh_token%27%5D&client_id=%5B%27764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com%27%5D&client_secret=%5B%27«google_client_secret»%27%5D&refresh_token=%5B%27«google_refresh_token»%27%5D
    headers:
      accept:
      - '*/*'
      content-type:
      - application/x-www-form-urlencoded
    method: POST
    uri: https://oauth2.googleapis.com/token
  response:
    headers:
      cache-control:
      - no-cache, no-store, max-age=0, must-revalidate
      content-type:
      - application/json; charset=utf-8
    parsed_body:
      access_token: «google_access_token»
      expires_in: 3599
      id_token: «google_id_token»
      scope: https://www.googleapis.com/auth/sqlservice.login openid https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email
      token_type: Bearer
    status:
      code: 200
      message: OK
- request:
    headers:
      accept:
      - '*/*'
      authorization:
      - Bearer «google_access_token»
      content-type:
      - application/json
      host:
      - us-central1-aiplatform.googleapis.com
    method: POST
    parsed_body:
      contents:
      - parts:
        - text: What is the capital of France?
        role: user
    uri: https://us-central1-aiplatform.googleapis.com/v1/projects/pydantic-ai/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent
  response:
    headers:
      content-type:
      - application/json; charset=UTF-8
    parsed_body:
      candidates:
      - avgLogprobs: -0.02431304194033146
        content:
          parts:
          - text: |
              The capital of France is Paris.
          role: model
        finishReason: STOP
      createTime: '2025-03-31T08:46:24.369892Z'
      modelVersion: gemini-2.0-flash
      responseId: YFbqZ-TJFvPB-O4PmemwiAw
    status:
      code: 200
      message: OK
version: 1
""",
        secrets={
            "google_client_secret": ("oauth_client_secret", "form body client_secret= (url-encoded list)"),
            "google_refresh_token": ("oauth_refresh_token", "form body refresh_token= (url-encoded list)"),
            "google_access_token": (
                "oauth_access_token",
                "parsed_body access_token and authorization: Bearer",
            ),
            "google_id_token": ("jwt", "parsed_body id_token"),
        },
        negatives={
            "YFbqZ-TJFvPB-O4PmemwiAw": "response id",
            "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com": "OAuth client id",
            "2025-03-31T08:46:24.369892Z": "timestamp",
        },
    )
)

BEDROCK_RESPONSE = """  response:
    headers:
      connection:
      - keep-alive
      content-type:
      - application/json
      x-amzn-requestid:
      - 9f3b2c1d-7e4a-4b8f-a0c6-5d2e1f9b7a48
    parsed_body:
      metrics:
        latencyMs: 408
      output:
        message:
          content:
          - text: The capital of France is Paris.
          role: assistant
      stopReason: end_turn
      usage:
        inputTokens: 13
        outputTokens: 73
        totalTokens: 86
    status:
      code: 200
      message: OK
version: 1
"""
SIGV4_SIG = "5d2b8f0c3e9a7d1b6f4c2e8a0d9b7c5e3f1a8d6b4c2e0f9a7d5b3c1e8f6a4d2b"

SPECS.append(
    Spec(
        name="pydantic_ai_bedrock_sigv4_binary.yaml",
        source=PYDANTIC + "test_bedrock/test_bedrock_model_top_p.yaml",
        licence="MIT",
        planted="SigV4 `authorization` (access key id) and `x-amz-security-token` as boto sends them: "
        "bytes, so vcrpy writes `!!binary` base64",
        template="""interactions:
- request:
    body: '{"messages": [{"role": "user", "content": [{"text": "What is the capital of France?"}]}], "system": [{"text": "You
      are a helpful chatbot."}], "inferenceConfig": {"topP": 0.5}}'
    headers:
      Authorization:
      - !!binary |
        «bin:authz»
      X-Amz-Date:
      - !!binary |
        MjAyNTAzMDFUMTIwMDAwWg==
      X-Amz-Security-Token:
      - !!binary |
        «bin:token»
      amz-sdk-invocation-id:
      - !!binary |
        NGJmMTQyYmQtZTdhMi00MGZlLTkxZDMtMDE0MTJkODJiMGZh
      content-type:
      - !!binary |
        YXBwbGljYXRpb24vanNvbg==
    method: POST
    uri: https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-micro-v1%3A0/converse
"""
        + BEDROCK_RESPONSE,
        blobs={
            "authz": "AWS4-HMAC-SHA256 Credential=«aws_temp_key_id»/20250301/us-east-1/bedrock/aws4_request, "
            "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=" + SIGV4_SIG,
            "token": "«aws_session_token»",
        },
        secrets={
            "aws_temp_key_id": ("aws_access_key_id", "header Authorization (SigV4), !!binary base64"),
            "aws_session_token": ("aws_session_token", "header X-Amz-Security-Token, !!binary base64"),
        },
        negatives={
            "NGJmMTQyYmQtZTdhMi00MGZlLTkxZDMtMDE0MTJkODJiMGZh": "base64 of the invocation uuid",
            "9f3b2c1d-7e4a-4b8f-a0c6-5d2e1f9b7a48": "request id (uuid)",
        },
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_bedrock_sigv4_text.yaml",
        source=PYDANTIC + "test_bedrock/test_bedrock_model_top_p.yaml",
        licence="MIT",
        planted="SigV4 headers as text (access key id, session token); a tool result holding an "
        "`~/.aws/credentials` file",
        template="""interactions:
- request:
    body: '{"messages": [{"role": "user", "content": [{"text": "Check my AWS setup"}]}, {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_kZ3m9QbV2xT7", "name": "read_file", "input": {"path": "~/.aws/credentials"}}}]}, {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_kZ3m9QbV2xT7", "content": [{"text": "[default]\\naws_access_key_id = «aws_access_key_id»\\naws_secret_access_key = «aws_secret_access_key»\\nregion = us-east-1\\n"}]}}]}], "inferenceConfig": {"topP": 0.5}}'
    headers:
      Authorization:
      - AWS4-HMAC-SHA256 Credential=«aws_temp_key_id»/20250301/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=«SIG»
      X-Amz-Date:
      - 20250301T120000Z
      X-Amz-Security-Token:
      - «aws_session_token»
      content-type:
      - application/json
    method: POST
    uri: https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-micro-v1%3A0/converse
""".replace("«SIG»", SIGV4_SIG)
        + BEDROCK_RESPONSE,
        secrets={
            "aws_temp_key_id": ("aws_access_key_id", "header Authorization (SigV4 Credential=)"),
            "aws_session_token": ("aws_session_token", "header X-Amz-Security-Token"),
            "aws_access_key_id": ("aws_access_key_id", "request body, tool result (credentials file)"),
            "aws_secret_access_key": (
                "aws_secret_access_key",
                "request body, tool result (credentials file)",
            ),
        },
        negatives={
            SIGV4_SIG: "SigV4 signature (HMAC-SHA256 hex)",
            "20250301T120000Z": "timestamp",
            "tooluse_kZ3m9QbV2xT7": "tool use id",
            "9f3b2c1d-7e4a-4b8f-a0c6-5d2e1f9b7a48": "request id (uuid)",
        },
    )
)

SPECS.append(
    Spec(
        name="pydantic_ai_bedrock_ids_only.yaml",
        source=PYDANTIC + "test_bedrock/test_bedrock_model_top_p.yaml",
        licence="MIT",
        planted="nothing (as published, less the long answer)",
        template="""interactions:
- request:
    body: '{"messages": [{"role": "user", "content": [{"text": "What is the capital of France?"}]}], "system": [{"text": "You
      are a helpful chatbot."}], "inferenceConfig": {"topP": 0.5}}'
    headers:
      amz-sdk-invocation-id:
      - !!binary |
        NGJmMTQyYmQtZTdhMi00MGZlLTkxZDMtMDE0MTJkODJiMGZh
      amz-sdk-request:
      - !!binary |
        YXR0ZW1wdD0x
      content-length:
      - '175'
      content-type:
      - !!binary |
        YXBwbGljYXRpb24vanNvbg==
    method: POST
    uri: https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-micro-v1%3A0/converse
"""
        + BEDROCK_RESPONSE,
        negatives={
            "NGJmMTQyYmQtZTdhMi00MGZlLTkxZDMtMDE0MTJkODJiMGZh": "base64 of the invocation uuid",
            "9f3b2c1d-7e4a-4b8f-a0c6-5d2e1f9b7a48": "request id (uuid)",
            "YXBwbGljYXRpb24vanNvbg==": "base64 header value",
        },
    )
)

# --------------------------------------------------------------------------- betamax JSON (praw)


def _praw(request_body: str, auth: str, uri: str, response_body: str, cookie: str) -> str:
    return (
        """{
  "interactions": [
    {
      "recorded_at": "2016-11-26T08:53:47",
      "request": {
        "body": \""""
        + request_body
        + """",
        "headers": {
          "Accept": [
            "*/*"
          ],
          "Authorization": [
            \""""
        + auth
        + """"
          ],
          "Content-Type": [
            "application/x-www-form-urlencoded"
          ],
          "User-Agent": [
            "<USER_AGENT> PRAW/4.0.0rc2 prawcore/0.3.0"
          ]
        },
        "method": "POST",
        "uri": \""""
        + uri
        + """"
      },
      "response": {
        "body": {
          "string": \""""
        + response_body
        + """"
        },
        "headers": {
          "Content-Type": [
            "application/json; charset=UTF-8"
          ],
          "Set-Cookie": [
            \""""
        + cookie
        + """"
          ],
          "X-Served-By": [
            "cache-sea1922-SEA"
          ],
          "X-Timer": [
            "S1480150427.481482,VS0,VE89"
          ]
        },
        "status": {
          "code": 200,
          "message": "OK"
        },
        "url": \""""
        + uri
        + """"
      }
    }
  ],
  "recorded_at": "2016-11-26T08:53:47",
  "version": 1
}
"""
    )


PRAW_NEGATIVES = {"S1480150427.481482,VS0,VE89": "timer", "cache-sea1922-SEA": "cache node"}

SPECS.append(
    Spec(
        name="praw_password_grant.json",
        source=PRAW + "TestAuthScript.test_scopes.json",
        licence="BSD-2-Clause",
        planted="`Basic <BASIC_AUTH>` filled in, the script app's password grant in the form body, "
        "`<ACCESS_TOKEN>` filled in inside the JSON string body",
        template=_praw(
            "grant_type=password&password=«reddit_password»&username=bboe",
            "Basic «reddit_basic»",
            "https://www.reddit.com/api/v1/access_token",
            '{\\"access_token\\": \\"«reddit_access_token»\\", \\"token_type\\": \\"bearer\\", '
            '\\"expires_in\\": 3600, \\"scope\\": \\"*\\"}',
            "edgebucket=lZqB4sTt9Mw2Ke0X5r; Domain=reddit.com; Max-Age=63071999; Path=/;  secure",
        ),
        secrets={
            "reddit_password": ("password", "form body password="),
            "reddit_basic": ("basic_auth", "header Authorization: Basic"),
            "reddit_access_token": ("oauth_access_token", "json string body access_token"),
        },
        negatives={**PRAW_NEGATIVES, "lZqB4sTt9Mw2Ke0X5r": "edge bucket cookie (not a session)"},
    )
)

SPECS.append(
    Spec(
        name="praw_refresh_grant_session.json",
        source=PRAW + "TestAuthScript.test_scopes.json (frame)",
        licence="BSD-2-Clause",
        planted="refresh grant (`refresh_token=` form body, both tokens in the JSON string body), "
        "`Authorization: bearer` and a `reddit_session` cookie",
        template=_praw(
            "grant_type=refresh_token&refresh_token=«reddit_refresh_token»",
            "bearer «reddit_access_token»",
            "https://www.reddit.com/api/v1/access_token",
            '{\\"access_token\\": \\"«reddit_access_token»\\", \\"token_type\\": \\"bearer\\", '
            '\\"refresh_token\\": \\"«reddit_refresh_token»\\", \\"expires_in\\": 3600, \\"scope\\": \\"*\\"}',
            "reddit_session=«reddit_session»; Domain=reddit.com; Path=/; secure; HttpOnly",
        ),
        secrets={
            "reddit_refresh_token": ("oauth_refresh_token", "form body refresh_token= and json string body"),
            "reddit_access_token": (
                "oauth_access_token",
                "header Authorization: bearer and json string body",
            ),
            "reddit_session": ("session_cookie", "header Set-Cookie reddit_session="),
        },
        negatives=PRAW_NEGATIVES,
    )
)

SPECS.append(
    Spec(
        name="praw_scrubbed_placeholders.json",
        source=PRAW + "TestAuthScript.test_scopes.json (as published)",
        licence="BSD-2-Clause",
        planted="nothing: the project's own placeholders",
        template=_praw(
            "grant_type=client_credentials",
            "Basic <BASIC_AUTH>",
            "https://www.reddit.com/api/v1/access_token",
            '{\\"access_token\\": \\"<ACCESS_TOKEN>\\", \\"token_type\\": \\"bearer\\", '
            '\\"expires_in\\": 3600, \\"scope\\": \\"*\\"}',
            "loid=<LOID>; Domain=reddit.com; Max-Age=63071999; Path=/;  secure",
        ),
        negatives={**PRAW_NEGATIVES, "<ACCESS_TOKEN>": "placeholder", "<BASIC_AUTH>": "placeholder"},
    )
)

# --------------------------------------------------------------------------- vcrpy JSON and YAML

SPECS.append(
    Spec(
        name="vcrpy_httpbin_basic_url.json",
        source=VCRPY + "new_cassette.json",
        licence="MIT",
        planted="credentials in the URL (`https://alice:…@httpbin.org`) and the `Authorization: Basic` "
        "requests derived from them",
        template="""[
    {
        "request": {
            "body": null,
            "headers": {
                "Accept": ["*/*"],
                "Accept-Encoding": ["gzip, deflate, compress"],
                "Authorization": ["Basic «httpbin_basic»"],
                "User-Agent": ["python-requests/2.2.1 CPython/2.6.1 Darwin/10.8.0"]
            },
            "method": "GET",
            "uri": "https://alice:«httpbin_password»@httpbin.org/basic-auth/alice/secret"
        },
        "response": {
            "status": {
                "message": "OK",
                "code": 200
            },
            "headers": [
                "Access-Control-Allow-Origin: *\\r\\n",
                "Content-Type: application/json\\r\\n",
                "Date: Mon, 21 Apr 2014 23:13:40 GMT\\r\\n",
                "Server: gunicorn/0.17.4\\r\\n",
                "Connection: keep-alive\\r\\n"
            ],
            "body": {
                "string": "{\\n  \\"authenticated\\": true,\\n  \\"user\\": \\"alice\\",\\n  \\"origin\\": \\"217.122.164.194\\"\\n}"
            }
        }
    }
]
""",
        secrets={
            "httpbin_password": ("url_password", "request uri userinfo (user:password@)"),
            "httpbin_basic": ("basic_auth", "header Authorization: Basic"),
        },
        negatives={"217.122.164.194": "ip address", "Mon, 21 Apr 2014 23:13:40 GMT": "timestamp"},
    )
)


def _vcrpy_yaml(req_headers: str, method: str, uri: str, body: str, resp_headers: str, resp_body: str) -> str:
    return f"""version: 1
interactions:
- request:
    body: {body}
    headers:
      accept: ['*/*']
      accept-encoding: ['gzip, deflate, compress']
      user-agent: ['python-requests/2.2.1 CPython/2.6.1 Darwin/10.8.0']
{req_headers}    method: {method}
    uri: {uri}
  response:
    body: {{string: "{resp_body}"}}
    headers:
      content-type: [application/json]
      date: ['Mon, 21 Apr 2014 23:06:09 GMT']
{resp_headers}      connection: [keep-alive]
    status: {{code: 200, message: OK}}
"""


SPECS.append(
    Spec(
        name="vcrpy_express_connect_sid.yaml",
        source=VCRPY + "new_cassette.yaml (flow-style vcrpy YAML; an Express app)",
        licence="MIT",
        planted="`set-cookie: connect.sid=s%3A…` (express-session) and a custom-named "
        "`corpus.sid=s%3A…`; a login form body with a password",
        template=_vcrpy_yaml(
            "      content-type: [application/x-www-form-urlencoded]\n",
            "POST",
            "http://localhost:3000/login",
            "username=alice&password=«httpbin_password»",
            "      set-cookie: ['connect.sid=«connect_sid»; Path=/; HttpOnly', 'corpus.sid=«app_sid»; Path=/;\n"
            "          Expires=Tue, 22 Apr 2014 23:06:09 GMT; HttpOnly']\n"
            "      x-powered-by: [Express]\n"
            "      etag: ['W/\"51-fx4kQ2mVQpZrT0bN8cS3dY7uLwA\"']\n",
            '{\\n  \\"ok\\": true,\\n  \\"user\\": \\"alice\\"\\n}',
        ),
        secrets={
            "httpbin_password": ("password", "form body password="),
            "connect_sid": ("session_cookie", "header set-cookie connect.sid="),
            "app_sid": ("session_cookie", "header set-cookie <app>.sid="),
        },
        negatives={
            'W/"51-fx4kQ2mVQpZrT0bN8cS3dY7uLwA"': "etag",
            "Tue, 22 Apr 2014 23:06:09 GMT": "timestamp",
        },
    )
)

SPECS.append(
    Spec(
        name="vcrpy_django_sessionid.yaml",
        source=VCRPY + "new_cassette.yaml (flow-style vcrpy YAML; a Django app)",
        licence="MIT",
        planted="`cookie: sessionid=…` sent to a Django API (csrftoken beside it is a labelled negative)",
        template=_vcrpy_yaml(
            "      cookie: [csrftoken=Zq3xV8nT1bK6mR4yW9pL2sD7fH0jG5cA; sessionid=«django_sessionid»]\n"
            "      x-csrftoken: [Zq3xV8nT1bK6mR4yW9pL2sD7fH0jG5cA]\n",
            "GET",
            "http://localhost:8000/api/me/",
            "null",
            "      vary: ['Accept, Cookie']\n      x-frame-options: [DENY]\n",
            '{\\n  \\"id\\": 17,\\n  \\"uuid\\": \\"3e0f7a9c-52d1-4b86-9e3a-c7d40f1b2a65\\"\\n}',
        ),
        secrets={"django_sessionid": ("session_cookie", "header cookie sessionid=")},
        negatives={
            "Zq3xV8nT1bK6mR4yW9pL2sD7fH0jG5cA": "csrftoken (not a credential)",
            "3e0f7a9c-52d1-4b86-9e3a-c7d40f1b2a65": "uuid",
        },
    )
)

SPECS.append(
    Spec(
        name="vcrpy_tomcat_jsessionid.yaml",
        source=VCRPY + "new_cassette.yaml (flow-style vcrpy YAML; a Jenkins/Tomcat server)",
        licence="MIT",
        planted="`Authorization: Basic` with a Jenkins API token; `set-cookie: JSESSIONID=…`",
        template=_vcrpy_yaml(
            "      authorization: [Basic «jenkins_basic»]\n",
            "GET",
            "http://ci.internal:8080/api/json?tree=jobs%5Bname%5D",
            "null",
            "      set-cookie: [JSESSIONID=«jsessionid»; Path=/; HttpOnly]\n"
            "      x-jenkins: ['2.426.1']\n"
            "      x-jenkins-session: [5e4c9a1f]\n",
            '{\\n  \\"_class\\": \\"hudson.model.Hudson\\",\\n  \\"jobs\\": []\\n}',
        ),
        secrets={
            "jenkins_basic": ("basic_auth", "header authorization: Basic"),
            "jsessionid": ("session_cookie", "header set-cookie JSESSIONID="),
        },
        negatives={"5e4c9a1f": "jenkins session hash", "hudson.model.Hudson": "class name"},
    )
)

# --------------------------------------------------------------------------- langchain (gzipped vcrpy YAML)

SPECS.append(
    Spec(
        name="langchain_openai_tool_call.yaml.gz",
        source="langchain-ai/langchain: libs/partners/*/tests/cassettes/*.yaml.gz (serializer: gzip of "
        "vcrpy YAML; the stored copies are binary, so the content is pydantic-ai's "
        "test_openai_instructions.yaml in vcrpy's block layout)",
        licence="MIT (pydantic-ai; langchain's layout only)",
        planted="`authorization: Bearer sk-proj-…` header; a GitHub PAT in a tool call's JSON arguments",
        gzip=True,
        template="""interactions:
- request:
    body: '{"messages":[{"content":"Open an issue on my repo","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"type":"function","id":"call_A7xK2pQm9Lb4","function":{"name":"github_api","arguments":"{\\\\"token\\\\": \\\\"«github_pat»\\\\", \\\\"repo\\\\": \\\\"corpus/demo\\\\"}"}}]}],"model":"gpt-4o-mini","stream":false}'
    headers:
      accept:
      - application/json
      authorization:
      - Bearer «openai_key»
      content-type:
      - application/json
      host:
      - api.openai.com
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body:
      string: '{"id":"chatcmpl-BJjf61mLb9z5H45ClJzbx0UWKwjo1","object":"chat.completion","created":1744043456,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}],"system_fingerprint":"fp_898ac29719"}'
    headers:
      content-type:
      - application/json
      x-request-id:
      - req_8d6f2b1c9a7e4f3b0c5d1e2a9b8c7d6e
    status:
      code: 200
      message: OK
version: 1
""",
        secrets={
            "github_pat": ("github_token", "request body, tool call arguments (JSON in JSON)"),
            "openai_key": ("openai_api_key", "header authorization: Bearer"),
        },
        negatives={**OPENAI_NEGATIVES, "call_A7xK2pQm9Lb4": "tool call id"},
    )
)

# --------------------------------------------------------------------------- cassetter-style JSON

SPECS.append(
    Spec(
        name="cassetter_stripe_charge.json",
        source=PYDANTIC + "test_openai/test_extra_headers.yaml (cassetter typed-body layout, as JSON)",
        licence="MIT",
        planted="`authorization: Bearer sk_live_…` and a restricted `rk_live_…` key sent as Basic "
        "username (Stripe's curl style), a form body; ids as negatives",
        template="""{
  "version": 1,
  "interactions": [
    {
      "request": {
        "method": "POST",
        "uri": "https://api.stripe.com/v1/charges",
        "headers": {
          "authorization": ["Bearer «stripe_live_key»"],
          "idempotency-key": ["6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"],
          "content-type": ["application/x-www-form-urlencoded"]
        },
        "body": {"type": "text", "content": "amount=2000&currency=usd&source=tok_visa&description=corpus"}
      },
      "response": {
        "status": 200,
        "headers": {
          "request-id": ["req_Qk7a1B2c3D4e5F"],
          "stripe-version": ["2024-06-20"]
        },
        "body": {"type": "json", "content": {"id": "ch_3PbQk7LkdIwHu7ix0n8yB2xz", "object": "charge", "amount": 2000, "balance_transaction": "txn_3PbQk7LkdIwHu7ix0Xq1w2e3", "paid": true}}
      }
    },
    {
      "request": {
        "method": "GET",
        "uri": "https://«stripe_restricted_key»:@api.stripe.com/v1/balance",
        "headers": {},
        "body": {"type": "none", "content": null}
      },
      "response": {
        "status": 200,
        "headers": {"request-id": ["req_Qk7z9Y8x7W6v5U"]},
        "body": {"type": "json", "content": {"object": "balance", "livemode": true}}
      }
    }
  ]
}
""",
        secrets={
            "stripe_live_key": ("stripe_key", "header authorization: Bearer"),
            "stripe_restricted_key": ("stripe_key", "request uri userinfo (key as username)"),
        },
        negatives={
            "ch_3PbQk7LkdIwHu7ix0n8yB2xz": "charge id",
            "txn_3PbQk7LkdIwHu7ix0Xq1w2e3": "balance transaction id",
            "req_Qk7a1B2c3D4e5F": "request id",
            "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b": "idempotency key (uuid)",
        },
    )
)

SPECS.append(
    Spec(
        name="cassetter_session_jwt_cookie.json",
        source=PYDANTIC + "test_openai/test_extra_headers.yaml (cassetter typed-body layout, as JSON)",
        licence="MIT",
        planted="a session JWT in `set-cookie: __session=…` (Clerk) and an app JWT as `Bearer`",
        template="""{
  "version": 1,
  "interactions": [
    {
      "request": {
        "method": "GET",
        "uri": "https://agent.example.invalid/api/tools",
        "headers": {
          "authorization": ["Bearer «jwt_session»"],
          "accept": ["application/json"]
        },
        "body": {"type": "none", "content": null}
      },
      "response": {
        "status": 200,
        "headers": {
          "set-cookie": ["__session=«clerk_session_jwt»; Path=/; Secure; SameSite=Lax"],
          "x-request-id": ["01HX7Q2M3N4P5R6S7T8V9W0XYZ"],
          "etag": ["\\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\\""]
        },
        "body": {"type": "json", "content": {"tools": ["search", "read_file"]}}
      }
    }
  ]
}
""",
        secrets={
            "jwt_session": ("jwt", "header authorization: Bearer"),
            "clerk_session_jwt": ("jwt", "header set-cookie __session="),
        },
        negatives={
            "01HX7Q2M3N4P5R6S7T8V9W0XYZ": "request id (ulid)",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855": "sha256 etag",
        },
    )
)
