"""The read model: the documents the CLI and the web inspector print, built from the
store and the projections; neither front end imports the other.

Every document is plain JSON (``dict``/``list``) or one line of text, read without
writing: ``sessions`` (the sessions list and a session's header) · ``tree`` (the node
tree, its shape, one node, an artifact's preview) · ``timeline`` (events as rows, a
filtered page) · ``tasks`` (the task DAG of each Task WAL) · ``usage`` (tokens and
cost by model, role and phase) · ``calls`` (a session's model calls, one call whole,
the waterfall of its runs) · ``redrives`` (the home's re-drives, one re-drive's
sessions) · ``summaries`` (one short line per event) ·
``excerpts`` (ids relative to their session, clipped lines, a node's content in one
line). ``actors/cli`` renders them for a terminal (``--json`` prints them as they
are); ``actors/ui`` serves them to the browser.
"""
