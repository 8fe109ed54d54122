"""Sessions as files: one session in one self-contained, versioned bundle, and bundles as
regression fixtures (docs/ci.md).

``files`` (the format: ``export_bundle``, ``read_bundle``, ``import_bundle``) ·
``replay`` (replay a bundle against today's code, ``App``; re-record an intended change,
``rerecord_bundle``). The public names are re-exported here; clew's own modules import
them from those two modules.
"""

from actors.runtime.bundles.files import (
    SUFFIX,
    VERSION,
    Bundle,
    ImportResult,
    export_bundle,
    import_bundle,
    read_bundle,
)
from actors.runtime.bundles.replay import App, Rerecorded, replay_bundle, rerecord_bundle

__all__ = [
    "SUFFIX",
    "VERSION",
    "App",
    "Bundle",
    "ImportResult",
    "Rerecorded",
    "export_bundle",
    "import_bundle",
    "read_bundle",
    "replay_bundle",
    "rerecord_bundle",
]
