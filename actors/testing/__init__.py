"""clew in a test suite: the pytest plugin that replays session bundles
(:mod:`actors.testing.pytest_plugin`; docs/ci.md)."""
