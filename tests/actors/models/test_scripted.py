"""``ScriptedModel`` scripts: what a script file may hold, refused up front with one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.errors import ScriptError
from actors.models.scripted import MAX_DELAY_MS, ScriptedModel, load_script


def _reply(**fields: object) -> str:
    return json.dumps({"rules": [{"replies": [{"text": "x", **fields}]}]})


BAD_SCRIPTS = [
    pytest.param(
        b'{"rules": [{"replies": [{"text": "\xff"}]}]}', "is not UTF-8 text: byte 0xff", id="utf8"
    ),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "nests deeper than 100 levels", id="deep-100k"),
    pytest.param(
        _reply(json=json.loads("[" * 150 + "]" * 150)).encode(),
        "nests deeper than 100 levels",
        id="deep-reply-json",
    ),
    pytest.param(_reply(delay_ms=-5).encode(), "delay_ms: Input should be greater than", id="neg"),
    pytest.param(
        _reply(delay_ms=9_999_999_999_999).encode(), "delay_ms: Input should be less", id="huge"
    ),
    pytest.param(
        b'{"delay_ms": -1, "rules": [{"replies": [{"text": "x"}]}]}',
        "invalid script at delay_ms",
        id="script-delay",
    ),
    pytest.param(_reply(text="x\udcff").encode(), "not valid Unicode ('\\udcff'", id="surrogate"),
    pytest.param(
        json.dumps(
            {"rules": [{"replies": [{"tool_calls": [{"name": "t", "arguments": {"\ud800": 1}}]}]}]}
        ).encode(),
        "not valid Unicode",
        id="surrogate-key",
    ),
]


@pytest.mark.parametrize(("content", "fragment"), BAD_SCRIPTS)
def test_a_script_no_run_could_use_is_refused_with_one_sentence(
    tmp_path: Path, content: bytes, fragment: str
) -> None:
    path = tmp_path / "script.json"
    path.write_bytes(content)
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    message = str(caught.value)
    assert fragment in message, message
    assert "\n" not in message


def test_a_delay_given_to_the_model_is_bounded_like_a_scripted_one() -> None:
    script = {"rules": [{"replies": [{"text": "x"}]}]}
    assert MAX_DELAY_MS == ScriptedModel(script, delay_ms=MAX_DELAY_MS)._delay_ms
    for bad in (-1, MAX_DELAY_MS + 1):
        with pytest.raises(ScriptError, match=f"delay_ms must be 0 to {MAX_DELAY_MS} ms"):
            ScriptedModel(script, delay_ms=bad)
