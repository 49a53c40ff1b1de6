"""Workload 4: the secret scanner on ~50 MB of cassettes with planted keys and look-alike noise.

The corpus is generated (seeded) in a scratch directory: pretty-printed JSON
cassettes whose bulk is base64 embeddings, ids, UUIDs and sha digests (none of
which is a secret), with one key of every built-in rule planted per file,
rotating through four places: a request header, a chat message, a tool call's
``arguments`` string (JSON inside JSON), and an environment dump in a tool
result. A planted key counts as found when a finding's fingerprint is that
key's; any other finding is a false positive.

A second measure is what the ``cassette-secrets`` hook costs: a real git
repository with 1,000 staged cassettes of ~30 KB (one interaction of the same
kind each, a key planted in every 100th), scanned in-process by
``cassette scan --staged`` with its cache off and then again with it on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._harness import NOT_INSTALLED, BenchConfig, Row, Section, Target, label, peer, profile_text, timed

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


@dataclass(frozen=True)
class Plant:
    """A key as it is written (``text``) and the part a scanner must report (``secret``)."""

    rule: str
    text: str
    secret: str
    env: str  # the variable / field name it sits under


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random text from ``alphabet`` with at least one upper-case letter, lower-case letter and digit."""
    while True:
        s = _pick(rng, alphabet, n)
        if any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s):
            return s


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _plain(rule: str, env: str, make: Callable[[random.Random], str]) -> Callable[[random.Random], Plant]:
    def plant(rng: random.Random) -> Plant:
        key = make(rng)
        return Plant(rule, key, key, env)

    return plant


def _jwt(rng: random.Random) -> str:
    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    body = _b64url(
        json.dumps({"sub": _pick(rng, ALNUM, 12), "iat": rng.randrange(10**9, 2 * 10**9)}).encode()
    )
    return f"{header}.{body}.{_pick(rng, URLSAFE, 43)}"


def _private_key(rng: random.Random) -> str:
    lines = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(12)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----"


def _slack_webhook(rng: random.Random) -> Plant:
    tail = f"T{_pick(rng, B32, 8)}/B{_pick(rng, B32, 8)}/{_mixed(rng, ALNUM, 24)}"
    return Plant(
        "slack-webhook-url",
        "https://hooks.slack.com/services/" + tail,
        "hooks.slack.com/services/" + tail,
        "SLACK_WEBHOOK_URL",
    )


# One generator per built-in rule id: shapes from the providers' documented formats.
GENERATORS: dict[str, Callable[[random.Random], Plant]] = {
    "anthropic-api-key": _plain(
        "anthropic-api-key", "ANTHROPIC_API_KEY", lambda r: "sk-ant-api03-" + _mixed(r, URLSAFE, 93) + "AA"
    ),
    "anthropic-admin-key": _plain(
        "anthropic-admin-key",
        "ANTHROPIC_ADMIN_KEY",
        lambda r: "sk-ant-admin01-" + _mixed(r, URLSAFE, 93) + "AA",
    ),
    "anthropic-oauth-token": _plain(
        "anthropic-oauth-token", "CLAUDE_CODE_OAUTH_TOKEN", lambda r: "sk-ant-oat01-" + _mixed(r, URLSAFE, 80)
    ),
    "openrouter-api-key": _plain(
        "openrouter-api-key", "OPENROUTER_API_KEY", lambda r: "sk-or-v1-" + _pick(r, HEX, 64)
    ),
    "openai-api-key": _plain(
        "openai-api-key",
        "OPENAI_API_KEY",
        lambda r: r.choice(
            [
                "sk-proj-" + _mixed(r, URLSAFE, 74) + "T3BlbkFJ" + _mixed(r, URLSAFE, 74),
                "sk-svcacct-" + _mixed(r, URLSAFE, 74) + "T3BlbkFJ" + _mixed(r, URLSAFE, 74),
                "sk-" + _mixed(r, ALNUM, 20) + "T3BlbkFJ" + _mixed(r, ALNUM, 20),
            ]
        ),
    ),
    "google-api-key": _plain("google-api-key", "GEMINI_API_KEY", lambda r: "AIza" + _mixed(r, URLSAFE, 35)),
    "aws-access-key-id": _plain(
        "aws-access-key-id", "AWS_ACCESS_KEY_ID", lambda r: "AKIA" + _pick(r, B32, 16)
    ),
    "aws-secret-access-key": _plain(
        "aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", lambda r: _mixed(r, ALNUM + "/+", 40)
    ),
    "aws-session-token": _plain(
        "aws-session-token", "AWS_SESSION_TOKEN", lambda r: "IQoJb3JpZ2luX2Vj" + _mixed(r, ALNUM + "/+", 300)
    ),
    "azure-ad-client-secret": _plain(
        "azure-ad-client-secret",
        "AZURE_CLIENT_SECRET",
        lambda r: _pick(r, ALNUM, 3) + str(r.randrange(10)) + "Q~" + _mixed(r, ALNUM + "_~.-", 34),
    ),
    "github-token": _plain("github-token", "GITHUB_TOKEN", lambda r: "ghp_" + _mixed(r, ALNUM, 36)),
    "github-fine-grained-pat": _plain(
        "github-fine-grained-pat", "GH_PAT", lambda r: "github_pat_" + _mixed(r, ALNUM + "_", 82)
    ),
    "slack-token": _plain(
        "slack-token",
        "SLACK_BOT_TOKEN",
        lambda r: f"xoxb-{_pick(r, string.digits, 12)}-{_pick(r, string.digits, 13)}-{_mixed(r, ALNUM, 24)}",
    ),
    "slack-webhook-url": _slack_webhook,
    "stripe-live-key": _plain(
        "stripe-live-key", "STRIPE_SECRET_KEY", lambda r: "sk_live_" + _mixed(r, ALNUM, 99)
    ),
    "huggingface-token": _plain(
        "huggingface-token",
        "HF_TOKEN",
        lambda r: "hf_" + _mixed(r, string.ascii_letters + "0", 34).replace("0", "q"),
    ),
    "groq-api-key": _plain("groq-api-key", "GROQ_API_KEY", lambda r: "gsk_" + _mixed(r, ALNUM, 52)),
    "xai-api-key": _plain("xai-api-key", "XAI_API_KEY", lambda r: "xai-" + _mixed(r, ALNUM, 80)),
    "replicate-api-token": _plain(
        "replicate-api-token", "REPLICATE_API_TOKEN", lambda r: "r8_" + _mixed(r, ALNUM, 37)
    ),
    "langsmith-api-key": _plain(
        "langsmith-api-key",
        "LANGSMITH_API_KEY",
        lambda r: f"lsv2_pt_{_pick(r, HEX + 'ghijkz', 32)}_{_pick(r, HEX, 10)}",
    ),
    "perplexity-api-key": _plain(
        "perplexity-api-key", "PPLX_API_KEY", lambda r: "pplx-" + _mixed(r, ALNUM, 48)
    ),
    "private-key": _plain("private-key", "SSH_PRIVATE_KEY", _private_key),
    "jwt": _plain("jwt", "SESSION_JWT", _jwt),
    "cohere-api-key": _plain("cohere-api-key", "COHERE_API_KEY", lambda r: _mixed(r, ALNUM, 40)),
    "deepseek-api-key": _plain("deepseek-api-key", "DEEPSEEK_API_KEY", lambda r: "sk-" + _pick(r, HEX, 32)),
    "azure-openai-key": _plain("azure-openai-key", "AZURE_OPENAI_API_KEY", lambda r: _pick(r, HEX, 32)),
    "generic-secret": _plain(
        "generic-secret", "DB_PASSWORD", lambda r: _mixed(r, ALNUM + "!#$%&*+-.=?@^_~", 24)
    ),
}
# A bearer token with no recognisable prefix: only the "Bearer" before it says what it is.
GENERATORS["bearer-token"] = lambda r: Plant(
    "bearer-token", "Bearer " + (k := _mixed(r, ALNUM + "._-", 40)), k, "AUTH_HEADER"
)

GENERATORS["google-oauth-token"] = _plain(
    "google-oauth-token", "GOOGLE_ACCESS_TOKEN", lambda r: "ya29." + _mixed(r, URLSAFE, 150)
)
# HTTP Basic credentials: base64 of user:password, announced only by "Basic"
GENERATORS["basic-auth"] = lambda r: Plant(
    "basic-auth",
    "Basic " + (k := base64.b64encode(f"svc-{_pick(r, ALNUM, 6)}:{_mixed(r, ALNUM, 20)}".encode()).decode()),
    k,
    "AUTH_HEADER",
)
GENERATORS["url-credentials"] = lambda r: Plant(
    "url-credentials",
    f"postgres://app:{(k := _mixed(r, ALNUM, 20))}@db.internal:5432/orders",
    k,
    "DATABASE_URL",
)
# a password in an XML config a tool read (Maven's settings.xml): only the element's name says what it is
GENERATORS["xml-secret"] = lambda r: Plant(
    "xml-secret",
    f"<server><id>nexus</id><password>{(k := _mixed(r, ALNUM + '!#%*+-.=?@^_~', 22))}</password></server>",
    k,
    "MAVEN_SETTINGS",
)

PLACES = ("header", "message", "tool_arguments", "env_dump")


def _decoys(rng: random.Random) -> dict[str, Any]:
    """Ids, UUIDs, sha digests: what an LLM API puts everywhere and no secret scanner may flag."""
    return {
        "id": "chatcmpl-" + _pick(rng, ALNUM, 29),
        "request_id": "req_" + _pick(rng, HEX, 24),
        "trace_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "session_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "idempotency_key": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "call_id": "call_" + _pick(rng, ALNUM, 24),
        "message_id": "msg_01" + _pick(rng, ALNUM, 22),
        "tool_use_id": "toolu_01" + _pick(rng, ALNUM, 22),
        "file_id": "file-" + _pick(rng, ALNUM, 24),
        "etag": hashlib.sha256(rng.randbytes(16)).hexdigest(),
        "commit": hashlib.sha1(rng.randbytes(16)).hexdigest(),
        "checksum": "sha256:" + hashlib.sha256(rng.randbytes(16)).hexdigest(),
        "system_fingerprint": "fp_" + _pick(rng, HEX, 10),
    }


_PROSE = (
    "The customer says the tent arrived with a torn seam and asks for a replacement before the weekend. "
    "I checked the order history: it shipped on the 3rd, was delivered on the 9th, "
    "and no return is open yet. "
)


def _embedding(rng: random.Random) -> dict[str, Any]:
    return {"object": "embedding", "index": 0, "embedding": base64.b64encode(rng.randbytes(6144)).decode()}


def _interaction(rng: random.Random, seq: int, plants: list[tuple[Plant, str]]) -> dict[str, Any]:
    headers: dict[str, str] = {
        "content-type": "application/json",
        "x-request-id": "req_" + _pick(rng, HEX, 24),
    }
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _PROSE * 2},
        {"role": "user", "content": _PROSE + f"(case {seq})"},
    ]
    tool_args: dict[str, Any] = {"order_id": str(100000 + seq), "include_history": True}
    env_lines = [
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "HOME=/home/app",
        "LANG=C.UTF-8",
        f"RUN_ID={uuid.UUID(int=rng.getrandbits(128))}",
    ]
    for plant, place in plants:
        if place == "header":
            if plant.rule == "bearer-token":
                headers["authorization"] = plant.text
            else:
                headers[plant.env.lower().replace("_", "-")] = plant.text
        elif place == "message":
            messages.append(
                {
                    "role": "user",
                    "content": f"It fails with my {plant.env}={plant.text} - what is wrong with the setup?",
                }
            )
        elif place == "tool_arguments":
            tool_args[plant.env.lower()] = plant.text
        else:
            env_lines.append(f"{plant.env}={plant.text}")
    decoys = _decoys(rng)
    calls = [
        {
            "id": decoys["call_id"],
            "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps(tool_args)},
        }
    ]
    return {
        "seq": seq,
        "kind": "llm",
        "key": hashlib.sha256(f"{seq}".encode()).hexdigest(),
        "request": {"headers": headers, "messages": messages, "metadata": decoys},
        "response": {
            "status": 200,
            "json": {
                "id": decoys["id"],
                "choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}],
                "data": [_embedding(rng) for _ in range(4)],
            },
            "tool_result": {"tool_call_id": decoys["call_id"], "output": "\n".join(env_lines)},
        },
    }


def make_corpus(
    root: Path, total_bytes: int, file_bytes: int, seed: int = 7
) -> tuple[list[Path], dict[str, list[Plant]]]:
    """Write the corpus; returns the files and the keys planted in each (by file name)."""
    import orjson

    rng = random.Random(seed)
    rules = list(GENERATORS)
    files: list[Path] = []
    planted: dict[str, list[Plant]] = {}
    written = 0
    n = 0
    while written < total_bytes:
        plants = [(GENERATORS[r](rng), PLACES[(n + i) % len(PLACES)]) for i, r in enumerate(rules)]
        interactions = []
        size = 0
        seq = 0
        pending = list(plants)
        while size < file_bytes or pending:
            batch, pending = pending[:4], pending[4:]
            item = _interaction(rng, seq, batch)
            interactions.append(item)
            size += 26_000  # about one interaction (four 8 KB embeddings and the rest)
            seq += 1
        data = orjson.dumps({"version": 1, "interactions": interactions}, option=orjson.OPT_INDENT_2)
        path = root / f"cassette_{n:03d}.json"
        path.write_bytes(data)
        files.append(path)
        planted[path.name] = [p for p, _ in plants]
        written += len(data)
        n += 1
    return files, planted


def _forms(secret: str) -> list[str]:
    """What counts as reporting ``secret``: the secret as decoded text, as it sits in JSON (escaped
    once and, inside tool arguments, twice), and with one boundary character lost (a finding that
    leaves one character of a key behind still locates it)."""
    once = json.dumps(secret)[1:-1]
    twice = json.dumps(once)[1:-1]
    return list(dict.fromkeys([secret, once, twice, secret[1:], secret[:-1]]))


def _ours_scan(files: list[Path]) -> tuple[float, float, dict[str, list[Any]]]:
    from cassette.plugins.manager import default_rules
    from cassette.secrets import Scanner

    scanner = Scanner(default_rules())
    findings: dict[str, list[Any]] = {}
    total = sum(p.stat().st_size for p in files)
    with timed() as t:
        for path in files:
            findings[path.name] = scanner.scan_file(path, display=path.name)
    return total / 1e6 / t.cpu, total / 1e6, findings


def _score_ours(
    findings: dict[str, list[Any]], planted: dict[str, list[Plant]]
) -> tuple[int, int, int, list[str], dict[str, int]]:
    from cassette.plugins.manager import default_rules
    from cassette.secrets import fingerprint

    rule_ids = [r.id for r in default_rules()]
    found = total = fp = 0
    examples: list[str] = []
    missed_by_rule: dict[str, int] = {}
    for name, plants in planted.items():
        got = {f.fingerprint for f in findings.get(name, [])}
        expected: set[str] = set()
        for plant in plants:
            prints = {fingerprint(r, form) for r in rule_ids for form in _forms(plant.secret)}
            expected |= prints
            total += 1
            if got & prints:
                found += 1
            else:
                missed_by_rule[plant.rule] = missed_by_rule.get(plant.rule, 0) + 1
        for f in findings.get(name, []):
            if f.fingerprint not in expected:
                fp += 1
                if len(examples) < 6:
                    examples.append(f"{f.rule} {f.masked} at {f.path or 'line ' + str(f.line)}")
    return found, total, fp, examples, missed_by_rule


def _detect_secrets(
    files: list[Path], planted: dict[str, list[Plant]]
) -> tuple[float, int, int, int, list[str]]:
    from detect_secrets.core import scan as ds_scan
    from detect_secrets.settings import default_settings

    total = sum(p.stat().st_size for p in files)
    values: dict[str, list[tuple[str, str]]] = {}
    with default_settings(), timed() as t:
        for path in files:
            values[path.name] = [(s.type, s.secret_value or "") for s in ds_scan.scan_file(str(path))]
    found = count = fp = 0
    examples: list[str] = []
    for path in files:
        plants = planted[path.name]
        hits = values[path.name]
        for plant in plants:
            count += 1
            forms = _forms(plant.secret)
            if any(v and (v in form or form in v) for _, v in hits for form in forms):
                found += 1
        for kind, v in hits:
            if not any(v and (v in form or form in v) for p in plants for form in _forms(p.secret)):
                fp += 1
                if len(examples) < 4:
                    examples.append(f"{kind}: {v[:12]}…")
    return total / 1e6 / t.cpu, found, count, fp, examples


def make_staged_repo(root: Path, count: int, seed: int = 11) -> tuple[int, int]:
    """A git repository at ``root`` with ``count`` cassettes of ~30 KB staged (none committed).

    Returns (bytes staged, keys planted); a key is planted in every 100th cassette.
    """
    import subprocess

    import orjson

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    folder = root / "tests" / "cassettes"
    folder.mkdir(parents=True, exist_ok=True)
    rules = list(GENERATORS)
    size = planted = 0
    for n in range(count):
        plants = []
        if n % 100 == 0:
            plants = [(GENERATORS[rules[n // 100 % len(rules)]](rng), PLACES[n // 100 % len(PLACES)])]
            planted += 1
        item = _interaction(rng, 0, plants)
        item["response"]["json"]["data"].pop()  # three embeddings: ~30 KB a cassette
        doc = {"version": 2, "interactions": [item]}
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
        (folder / f"case_{n:04d}.json").write_bytes(data)
        size += len(data)
    subprocess.run(["git", "-C", str(root), "add", "tests"], check=True)
    return size, planted


def _staged_scan(root: Path, *, cache: bool) -> tuple[float, int, int]:
    """CPU seconds of ``cassette scan --staged --format json`` in-process in ``root``, exit code, findings."""
    import contextlib
    import io
    import os

    from cassette.cli import main
    from cassette.config import clear_config_cache

    cache_file = root / ".git" / "cassette-scan-cache"
    if not cache:
        cache_file.unlink(missing_ok=True)
    argv = ["scan", "--staged", "--format", "json"] + ([] if cache else ["--no-cache"])
    here = os.getcwd()
    out = io.StringIO()
    os.chdir(root)
    try:
        clear_config_cache()
        with contextlib.redirect_stdout(out), timed() as t:
            code = main(argv)
    finally:
        os.chdir(here)
        clear_config_cache()
    return t.cpu, code, len(json.loads(out.getvalue()))


def _staged_rows(cfg: BenchConfig, section: Section) -> list[Row]:
    count = cfg.size(1000, 100)
    root = cfg.scratch("scan-staged") / "repo"
    if root.exists():
        import shutil

        shutil.rmtree(root)
    size, planted = make_staged_repo(root, count)
    _staged_scan(root, cache=True)  # warm the imports and fill the cache
    cold = sorted(_staged_scan(root, cache=False) for _ in range(cfg.size(3, 1)))
    _staged_scan(root, cache=True)  # the cold runs left no cache: fill it again
    warm = sorted(_staged_scan(root, cache=True) for _ in range(cfg.size(3, 1)))
    cold_s, code, found = cold[len(cold) // 2]
    warm_s = warm[len(warm) // 2][0]
    section.lines.append(
        f"staged scan: {count:,} cassettes ({size / 1e6:.1f} MB) staged in a real git repository, "
        f"`cassette scan --staged` in-process: {cold_s:.2f} s CPU with --no-cache, {warm_s:.2f} s with the "
        f"cache of an earlier scan; exit {code}, {found} findings for {planted} planted keys"
    )
    return [
        Row(
            f"staged scan of {count:,} cassettes (~{size / 1e6:.0f} MB), no cache",
            "s",
            cold_s,
            target=Target("<", 1, on="ours"),
        ),
        Row(f"staged scan of {count:,} cassettes, cached by blob id", "s", warm_s),
    ]


def _mb(files: list[Path]) -> float:
    return sum(p.stat().st_size for p in files) / 1e6


def run(cfg: BenchConfig) -> Section:
    section = Section("scan", "4. Secret scan: throughput, recall, false positives")
    if peer("cassette.secrets") is None:
        section.error = "cassette/_secrets.py is not there yet"
        return section
    from cassette.plugins.manager import default_rules

    work = cfg.scratch("scan")
    total = cfg.size(50_000_000, 1_000_000)
    with timed() as gen:
        files, planted = make_corpus(work, total, cfg.size(500_000, 250_000))
    rule_ids = [r.id for r in default_rules()]
    without = [r for r in rule_ids if r not in GENERATORS]
    n_keys = sum(len(p) for p in planted.values())
    section.lines.append(
        f"corpus: {len(files)} pretty-printed JSON cassettes, {_mb(files):.1f} MB "
        f"(generated in {gen.wall:.1f} s, seeded); {n_keys:,} planted keys ({len(GENERATORS)} rules × "
        f"{len(files)} files, rotating through {', '.join(PLACES)}); noise: base64 embeddings, "
        "chatcmpl/call/msg/"
        "toolu/file ids, UUIDs, sha1/sha256 digests"
    )
    if without:
        section.lines.append(f"rules with no planted key (no generator here yet): {', '.join(without)}")
    speeds = []
    findings: dict[str, list[Any]] = {}
    for _ in range(cfg.size(3, 1)):
        speed, megabytes, findings = _ours_scan(files)
        speeds.append(speed)
    ours_speed = sorted(speeds)[len(speeds) // 2]
    found, count, fp, examples, missed = _score_ours(findings, planted)
    recall = 100.0 * found / count if count else None
    section.lines.append(
        f"ours: {ours_speed:.1f} MB/s over {megabytes:.1f} MB (median of {len(speeds)}), "
        f"recall {found}/{count}, {fp} false positives"
    )
    if missed:
        section.lines.append("ours missed: " + ", ".join(f"{k} ×{v}" for k, v in sorted(missed.items())))
    if examples:
        section.lines.append("ours, false positives (first few): " + "; ".join(examples))
    ds_label = label("detect-secrets")
    have_ds = peer("detect_secrets") is not None
    ds: tuple[float, int, int, int, list[str]] | None = None
    subset: list[Path] = []
    if have_ds:
        # detect-secrets scans ~0.2 MB/s: a few files of the same corpus keep the bench under ten minutes
        budget = cfg.size(1_500_000, 100_000)
        for path in files:
            if sum(p.stat().st_size for p in subset) >= budget:
                break
            subset.append(path)
        ds = _detect_secrets(subset, planted)
        sub_speed, sub_mb, sub_findings = _ours_scan(subset)
        s_found, s_count, s_fp, _, _ = _score_ours(sub_findings, {p.name: planted[p.name] for p in subset})
        section.lines.append(
            f"{ds_label} on the first {len(subset)} files ({sub_mb:.1f} MB): {ds[0]:.3f} MB/s, "
            f"recall {ds[1]}/{ds[2]}, {ds[3]:,} false positives (e.g. {'; '.join(ds[4])}); "
            f"ours on the same files: {sub_speed:.1f} MB/s, recall {s_found}/{s_count}, "
            f"{s_fp} false positives"
        )
    status = "" if have_ds else NOT_INSTALLED
    section.rows += [
        Row("throughput", "MB/s", ours_speed, target=Target(">=", 50, on="ours")),
        Row(
            "throughput vs detect-secrets",
            "MB/s",
            ours_speed,
            ds_label,
            ds[0] if ds else None,
            status,
            Target(">=", 100),
        ),
        Row(
            "recall of planted keys",
            "%",
            recall,
            ds_label,
            100.0 * ds[1] / ds[2] if ds and ds[2] else None,
            status,
            Target(">=", 99, on="ours"),
            show_ratio=False,
        ),
        Row(
            "false positives (ids, UUIDs, digests, embeddings)",
            "findings",
            float(fp),
            ds_label,
            float(ds[3]) if ds else None,
            status,
            Target("==", 0, on="ours"),
            note="detect-secrets counted on its subset",
            show_ratio=False,
        ),
    ]
    section.rows += _staged_rows(cfg, section)
    if cfg.profile:
        sample = files[: max(1, len(files) // 10)]
        section.profile = f"our scan of {len(sample)} files:\n" + profile_text(lambda: _ours_scan(sample))
    return section
