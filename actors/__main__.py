"""``python -m actors`` runs the clew CLI."""

from actors.cli import main

raise SystemExit(main())
