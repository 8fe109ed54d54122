"""One process of one trial: run or recover the scenario in one system, print the answer.

Usage: ``python child.py SYSTEM MODE TRIAL_DIR BASE_URL`` (MODE: ``run`` | ``recover``).
Prints JSON lines: ``{"ready": t}`` once the system's store is open, ``{"answer": …}`` at
the end. The runner kills it from outside (or it kills itself at a fault point).
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    name, mode, trial, base_url = sys.argv[1:5]
    warnings.simplefilter("ignore")  # peers' deprecation notices are not results
    system = importlib.import_module(f"sys_{name}")
    answer = system.run(mode, Path(trial), base_url)
    print(json.dumps({"answer": answer}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
