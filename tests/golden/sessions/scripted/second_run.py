"""Add the second main run to the scripted fixture with clew 0a7c95d's Python API.

Run once, from this directory, after the ``clew run`` of README.md:

    PYTHONPATH=/tmp/clew-old python3 second_run.py SESSION_ID

(``clew run`` always creates a new session, so the second run needs the API.) The model
is built as the CLI builds ``--model scripted:script.json``, so its recorded name is the
session's recipe.
"""

# The imports are clew 0a7c95d's modules; ``actors.scripted`` is gone from today's tree,
# so isort would file it as a third-party module.
# ruff: noqa: I001

import json
import sys
from pathlib import Path

import msgspec

from actors.runtime import Runtime
from actors.scripted import ScriptedModel

model = ScriptedModel(Path("script.json"), name="scripted:script.json")
with Runtime("home", "project") as rt:
    outcome = rt.session(sys.argv[1]).run(
        "Follow up on @notes.md and @missing.md: is the release on track?", model=[model]
    )
print(json.dumps(msgspec.to_builtins(outcome)))
