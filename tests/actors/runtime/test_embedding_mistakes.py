"""Common embedding mistakes are one typed error naming the fix, never a bare
``AttributeError`` (issue 32, item 8): a plain function as a tool, a model without a
name, ``model=None``, a model whose ``complete`` returns a ``str``."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors import Runtime, ScriptedModel, UsageError
from eventlog.events import ModelFailed, RunStarted

HELLO = ScriptedModel({"rules": [{"replies": [{"text": "Hello."}]}]})


def plain(text: str) -> str:
    return text


class Nameless:
    def complete(self, request: object) -> object:
        raise AssertionError("never asked")


class Chatty:
    name = "chatty"

    def complete(self, request: object) -> str:
        return "hi"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"model": HELLO, "tools": [plain]}, "plain is a plain function, not a tool: decorate"),
        ({"model": HELLO, "tools": [object()]}, "a object object is not a tool (it has no name"),
        ({"model": Nameless()}, "Nameless object is not a model (it has no name)"),
        ({"model": None}, "model: None is not a model: pass one with a `name`"),
    ],
    ids=["plain-function-tool", "object-tool", "nameless-model", "model-none"],
)
def test_an_embedding_mistake_is_a_usage_error_at_the_call_and_writes_no_run(
    tmp_path: Path, kwargs: dict[str, object], says: str
) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        with pytest.raises(UsageError) as caught:
            session.run("hi", **kwargs)  # type: ignore[arg-type]
        events = [e.event for e in rt.store.read_events(session.id)]

    assert says in str(caught.value)
    assert [] == [e for e in events if isinstance(e, RunStarted)]


def test_a_model_whose_complete_returns_a_str_fails_the_call_naming_it(tmp_path: Path) -> None:
    with Runtime(tmp_path / "home", tmp_path) as rt:
        session = rt.new_session()
        outcome = session.run("hi", model=Chatty())
        failed = [e.event for e in rt.store.read_events(session.id)
                  if isinstance(e.event, ModelFailed)]  # fmt: skip

    assert "failed" == outcome.status
    assert {"BadModelReply"} == {f.error_type for f in failed}
    assert "model 'chatty': complete() returned a str, not a ModelResponse" in failed[0].message
