"""Compressed cassettes (`compress = true`): gzip manifests that every reader, hook and command opens.

Recorded and replayed through the real OpenAI SDK on the local server; git
repos are real ones in temp dirs; pytest runs are real (pytester).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import (
    CassetteConfigError,
    CompressedDataError,
    CorruptCassetteError,
    TruncatedCassetteError,
    load_cassette,
)
from cassette.cli import main
from cassette.config import clear_config_cache
from cassette.core.compression import GZIP_MAGIC, gunzip, gzip_bytes
from cassette.testing.devserver import DevServer
from tests.cli_helpers import one_line_error, run_cli
from tests.test_hooks import OPENAI_KEY, git, init_repo

SYSTEM = "You are a careful support agent for an online shop. " * 20  # long: shared through the store


def _ask(client: Any, question: str) -> Any:
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
    )


def _record(client: Any, path: str, **options: Any) -> list[str]:
    with cassette.using(path, mode="record", **options):
        return [_ask(client, q).choices[0].message.content for q in ("Where is my parcel?", "Refund me")]


def test_a_compressed_cassette_is_gzip_and_replays_real_sdk_objects(openai_client: Any) -> None:
    live = _record(openai_client, "c.json", compress=True)
    data = Path("c.json").read_bytes()
    assert data[:2] == GZIP_MAGIC
    doc = json.loads(gzip.decompress(data))  # any gzip tool reads it
    assert doc["version"] == 1 and len(doc["interactions"]) == 2
    response = doc["interactions"][0]["response"]
    assert "$blob" not in json.dumps(response)  # responses stay inline, compressed with the manifest
    assert doc["interactions"][0]["request"]["messages"][0]["content"].keys() == {"$blob"}  # shared prompt

    from openai.types.chat import ChatCompletion

    with cassette.using("c.json", mode="replay") as session:
        replies = [_ask(openai_client, q) for q in ("Where is my parcel?", "Refund me")]
    assert all(isinstance(r, ChatCompletion) for r in replies)
    assert [r.choices[0].message.content for r in replies] == live
    assert session.stats()["served"] == {"llm": 2}


def test_compressed_is_smaller_and_holds_the_same_cassette(openai_client: Any) -> None:
    _record(openai_client, "plain.json")
    _record(openai_client, "small.json", compress=True)
    plain, small = load_cassette("plain.json"), load_cassette("small.json")
    assert [i.key for i in plain.interactions] == [i.key for i in small.interactions]
    assert Path("small.json").stat().st_size < Path("plain.json").stat().st_size / 2


def test_rerecording_the_same_calls_leaves_a_compressed_file_untouched(devserver: DevServer) -> None:
    from openai import OpenAI

    def client() -> Any:  # a fresh server seed per recording would change the answers
        return cassette.instrument(
            OpenAI(base_url=devserver.openai_base_url, api_key="sk-test", max_retries=0)
        )

    _record(client(), "c.json", compress=True)
    inner = gunzip(Path("c.json").read_bytes())
    # the same manifest compressed by another zlib build (here: another level): not rewritten
    other = gzip.compress(inner, compresslevel=1, mtime=0)
    Path("c.json").write_bytes(other)
    with cassette.using("c.json", mode="replay"):
        _ask(client(), "Where is my parcel?")
        _ask(client(), "Refund me")
    assert Path("c.json").read_bytes() == other


def test_the_config_turns_compression_on_and_a_bad_value_is_a_config_error(openai_client: Any) -> None:
    Path("pyproject.toml").write_text("[tool.cassette]\ncompress = true\n")
    _record(openai_client, "c.json")
    assert Path("c.json").read_bytes()[:2] == GZIP_MAGIC
    _record(openai_client, "d.json", compress=False)  # the argument beats the config
    assert Path("d.json").read_bytes()[:1] == b"{"

    from cassette.config import clear_config_cache

    Path("pyproject.toml").write_text('[tool.cassette]\ncompress = "yes"\n')
    clear_config_cache()
    with pytest.raises(CassetteConfigError, match="compress"):
        cassette.using("e.json")
    clear_config_cache()
    Path("pyproject.toml").write_text("[tool.cassette]\n")
    with pytest.raises(CassetteConfigError, match="compress must be True or False"):
        cassette.using("e.json", compress="yes")


def test_the_pytest_marker_and_config_write_compressed_cassettes(
    pytester: pytest.Pytester, devserver: DevServer
) -> None:
    pytester.makepyprojecttoml("[tool.cassette]\ncassette_dir = 'cassettes'\n")
    pytester.makepyfile(
        f"""
        import pytest
        from openai import OpenAI
        import cassette

        def ask():
            client = cassette.instrument(
                OpenAI(base_url="{devserver.openai_base_url}", api_key="sk-test", max_retries=0)
            )
            return client.chat.completions.create(
                model="gpt-4o-mini", messages=[{{"role": "user", "content": "hello"}}]
            ).choices[0].message.content

        @pytest.mark.cassette("small.json", compress=True)
        def test_small():
            assert ask()

        @pytest.mark.cassette("plain.json")
        def test_plain():
            assert ask()

        @pytest.mark.cassette("bad.json", compress="yes")
        def test_bad():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*compress*True or False*"])
    assert (pytester.path / "cassettes/small.json").read_bytes()[:2] == GZIP_MAGIC
    assert (pytester.path / "cassettes/plain.json").read_bytes()[:1] == b"{"
    replay = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--cassette-mode=replay", "-k", "not bad"
    )
    replay.assert_outcomes(passed=2)


# --- damaged compressed files ----------------------------------------------------------------------


def _compressed(openai_client: Any) -> bytes:
    _record(openai_client, "c.json", compress=True)
    return Path("c.json").read_bytes()


def test_a_truncated_compressed_cassette_is_a_truncated_error_naming_the_file(openai_client: Any) -> None:
    data = _compressed(openai_client)
    Path("c.json").write_bytes(data[: len(data) // 2])
    truncated = r"c\.json is a compressed cassette.*truncated.*re-record"
    with pytest.raises(TruncatedCassetteError, match=truncated):
        load_cassette("c.json")
    with pytest.raises(TruncatedCassetteError), cassette.using("c.json", mode="replay"):
        pass


@pytest.mark.parametrize("damage", ["flipped", "trailing", "header"])
def test_a_damaged_compressed_cassette_is_a_corrupt_error_naming_the_file(
    openai_client: Any, damage: str
) -> None:
    data = bytearray(_compressed(openai_client))
    if damage == "flipped":
        data[len(data) // 2] ^= 0xFF
    elif damage == "trailing":
        data += b"garbage"
    else:
        data[2] = 7  # not deflate
    Path("c.json").write_bytes(bytes(data))
    with pytest.raises(CorruptCassetteError, match=r"c\.json is a compressed cassette.*damaged|follow"):
        load_cassette("c.json")


def test_verify_and_show_name_a_damaged_compressed_cassette(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _compressed(openai_client)
    assert main(["verify", "c.json"]) == 0
    code, out, _ = run_cli(capsys, "show", "c.json")
    assert code == 0 and "Where is my parcel?" in out
    Path("c.json").write_bytes(data[:-9])
    code, out, err = run_cli(capsys, "verify", "c.json")
    assert code == 1 and "c.json" in out + err and "truncated" in out + err
    code, _, err = run_cli(capsys, "show", "c.json")
    assert code != 0 and "truncated" in one_line_error(err, "show")


def test_gunzip_refuses_what_expands_past_its_limit() -> None:
    bomb = gzip_bytes(b"{" + b" " * 100_000 + b"}")
    assert len(bomb) < 1_000
    with pytest.raises(CompressedDataError, match="expands to more than"):
        gunzip(bomb, limit=50_000)
    assert gunzip(bomb, limit=200_000).startswith(b"{ ")


def test_gzip_bytes_is_the_same_on_every_machine() -> None:
    data = b'{"interactions":[],"version":1}\n'
    out = gzip_bytes(data)
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # no time, no name, OS unknown
    assert gzip.decompress(out) == data
    assert zlib.crc32(data).to_bytes(4, "little") == out[-8:-4]


# --- secrets, diffs, gc and drift read compressed cassettes -----------------------------------------


def _plant_key(path: str) -> None:
    doc = json.loads(gunzip(Path(path).read_bytes()))
    doc["interactions"][0]["response"]["headers"]["x-debug-token"] = OPENAI_KEY
    Path(path).write_bytes(gzip_bytes(json.dumps(doc).encode()))


def test_the_secret_scan_finds_a_key_inside_a_compressed_cassette(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    init_repo()
    _record(openai_client, "tests/cassettes/c.json", compress=True)
    git("add", "-A")
    assert main(["scan", "--staged"]) == 0
    _plant_key("tests/cassettes/c.json")
    assert main(["scan", "tests/cassettes/c.json"]) == 1
    out = capsys.readouterr().out
    assert "openai-api-key" in out and OPENAI_KEY not in out
    git("add", "-A")
    assert main(["scan", "--staged"]) == 1
    out = capsys.readouterr().out
    assert "openai-api-key" in out and 'interactions[0].response.headers["x-debug-token"]' in out


def test_the_pre_commit_hook_blocks_a_key_in_a_compressed_cassette(openai_client: Any) -> None:
    init_repo()
    _record(openai_client, "tests/cassettes/c.json", compress=True)
    assert main(["install-hooks"]) == 0
    git("add", "-A")
    git("commit", "-q", "-m", "clean compressed cassette")
    _plant_key("tests/cassettes/c.json")
    refused = git("commit", "-q", "-am", "leak", check=False)
    assert refused.returncode != 0 and "openai-api-key" in refused.stderr


def test_textconv_shows_a_compressed_cassette_as_readable_json(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(openai_client, "c.json", compress=True)
    assert main(["textconv", "c.json"]) == 0
    out = capsys.readouterr().out
    rendered = json.loads(out)
    assert rendered["interactions"][0]["request"]["messages"][0]["content"] == SYSTEM  # inlined
    assert out.count("\n") > 20  # laid out for people, not one compact line


def test_gc_keeps_the_blobs_a_compressed_cassette_references(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("pyproject.toml").write_text("[tool.cassette]\ncassette_dir = 'cassettes'\ncompress = true\n")
    _record(openai_client, "cassettes/c.json")
    blobs = sorted(p for p in Path("cassettes/.blobs").rglob("*") if p.is_file())
    assert blobs
    assert main(["gc"]) == 0
    assert sorted(p for p in Path("cassettes/.blobs").rglob("*") if p.is_file()) == blobs
    with cassette.using("cassettes/c.json", mode="replay"):
        _ask(openai_client, "Where is my parcel?")
        _ask(openai_client, "Refund me")


def test_drift_compares_a_compressed_rerecord_with_a_readable_cassette(openai_client: Any) -> None:
    _record(openai_client, "c.json")
    with cassette.using("c.json", mode="rerecord", compress=True):
        _ask(openai_client, "Where is my parcel?")
        _ask(openai_client, "Cancel my order")  # another request: drift, whatever the model answers
    pending = Path("c.pending.json")
    assert pending.read_bytes()[:2] == GZIP_MAGIC
    report = [(d.category, d.seq, d.excerpt) for d in cassette.drift("c.json")]
    assert report and all(d.cassette == "c.json" for d in cassette.drift("c.json"))
    # the same re-recording written readable: the same drift
    pending.write_bytes(gunzip(pending.read_bytes()))
    assert pending.read_bytes()[:1] == b"{"
    assert [(d.category, d.seq, d.excerpt) for d in cassette.drift("c.json")] == report


# --- cassette compress: converting existing cassettes ------------------------------------------------


def test_cassette_compress_converts_both_ways_and_back_to_the_same_bytes(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    live = _record(openai_client, "c.json")
    readable = Path("c.json").read_bytes()
    code, out, _ = run_cli(capsys, "compress", "c.json", "--dry-run")
    assert code == 0 and "would compress c.json" in out and Path("c.json").read_bytes() == readable
    code, out, _ = run_cli(capsys, "compress", "c.json")
    assert code == 0 and "compressed 1 cassette(s)" in out
    assert Path("c.json").read_bytes()[:2] == GZIP_MAGIC
    assert len(Path("c.json").read_bytes()) < len(readable)
    with cassette.using("c.json", mode="replay"):
        assert [
            _ask(openai_client, q).choices[0].message.content for q in ("Where is my parcel?", "Refund me")
        ] == live
    code, out, _ = run_cli(capsys, "compress", "c.json")
    assert code == 0 and "nothing to do" in out
    code, out, _ = run_cli(capsys, "compress", "--readable", "c.json")
    assert code == 0 and "made readable 1 cassette(s)" in out
    assert Path("c.json").read_bytes() == readable  # the round trip loses nothing, not even layout


def test_cassette_compress_reports_a_broken_file_and_converts_the_rest(
    openai_client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("pyproject.toml").write_text("[tool.cassette]\ncassette_dir = 'cassettes'\n")
    _record(openai_client, "cassettes/good.json")
    Path("cassettes/broken.json").write_text('{"interactions": [')
    code, out, _ = run_cli(capsys, "compress")  # the configured cassette_dir
    assert code == 1
    assert "broken.json: not converted:" in out and "truncated" in out
    assert "compressed 1 cassette(s)" in out and "1 could not be converted" in out
    assert Path("cassettes/good.json").read_bytes()[:2] == GZIP_MAGIC
    assert Path("cassettes/broken.json").read_text() == '{"interactions": ['  # left as it was


@pytest.mark.parametrize("damage", ["trailer cut", "bytes after it", "a second member", "bad crc"])
def test_the_scan_finds_a_key_in_a_damaged_compressed_cassette(
    openai_client: Any, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    _record(openai_client, "c.json", compress=True)
    _plant_key("c.json")
    data = bytearray(Path("c.json").read_bytes())
    if damage == "trailer cut":
        data = data[:-8]
    elif damage == "bytes after it":
        data += b"\x00garbage"
    elif damage == "a second member":
        data += gzip_bytes(b"{}")
    else:
        data[-8] ^= 0xFF
    Path("c.json").write_bytes(bytes(data))
    with pytest.raises(CorruptCassetteError):  # the file itself is refused...
        load_cassette("c.json")
    assert main(["scan", "c.json"]) == 1  # ...and the key in what still inflates is found
    out = capsys.readouterr().out
    assert "openai-api-key" in out and OPENAI_KEY not in out
    assert "damaged-compressed-file" in out and "restore it from git" in out


@pytest.mark.parametrize("damage", ["cut in half", "header only", "flipped byte"])
def test_the_scan_reports_a_compressed_cassette_it_cannot_read_whole(
    openai_client: Any, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    _record(openai_client, "c.json", compress=True)
    _plant_key("c.json")  # perhaps in the part that is lost: the file itself must not pass
    data = bytearray(Path("c.json").read_bytes())
    if damage == "cut in half":
        data = data[: len(data) // 2]
    elif damage == "header only":
        data = data[:10]
    else:
        data[len(data) // 2] ^= 0xFF
    Path("c.json").write_bytes(bytes(data))
    assert main(["scan", "c.json", "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert "damaged-compressed-file" in {f["rule"] for f in found}
    assert all(OPENAI_KEY not in json.dumps(f) for f in found)


@pytest.mark.parametrize(
    ("inner", "error", "reason"),
    [
        (b'{"interactions": [{"key": "', TruncatedCassetteError, "truncated"),
        (b"\xff\xfe\x00binary", CorruptCassetteError, "not UTF-8"),
        (b"[1, 2", TruncatedCassetteError, "truncated"),
    ],
)
def test_a_compressed_file_holding_no_manifest_gets_the_error_of_its_content(
    inner: bytes, error: type[Exception], reason: str
) -> None:
    Path("c.json").write_bytes(gzip_bytes(inner))
    with pytest.raises(error, match=reason) as caught:
        load_cassette("c.json")
    assert "cassette import" not in str(caught.value)  # not mistaken for another tool's file


def test_a_compressed_cassette_stays_compressed_when_re_recorded_unless_a_setting_says(
    openai_client: Any,
) -> None:
    _record(openai_client, "kept.json")
    assert main(["compress", "kept.json"]) == 0
    assert Path("kept.json").read_bytes()[:2] == GZIP_MAGIC
    _record(openai_client, "kept.json")  # no compress setting anywhere: the file keeps its form
    assert Path("kept.json").read_bytes()[:2] == GZIP_MAGIC
    with cassette.using("kept.json", mode="rerecord"):
        _ask(openai_client, "Where is my parcel?")
        _ask(openai_client, "Refund me")
    assert Path("kept.pending.json").read_bytes()[:2] == GZIP_MAGIC  # the pending one too
    _record(openai_client, "kept.json", compress=False)  # an explicit argument wins
    assert Path("kept.json").read_bytes()[:1] == b"{"
    assert main(["compress", "kept.json"]) == 0
    Path("pyproject.toml").write_text("[tool.cassette]\ncompress = false\n")  # so does the config key
    clear_config_cache()
    _record(openai_client, "kept.json")
    assert Path("kept.json").read_bytes()[:1] == b"{"
    _record(openai_client, "new.json")  # a new cassette follows the config
    assert Path("new.json").read_bytes()[:1] == b"{"
