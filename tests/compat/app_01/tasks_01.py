"""A small application written from clew 0.1.0's docs/tasks.md ("API") only.

It drives a session's Task WAL through the task manager handle 0.1 documented, stops
it, opens it again and reads the DAG back from the file. Prints one JSON document.

Usage: ``python tasks_01.py PROJECT``. Do not modernise this file: it is the 0.1
contract (docs/compatibility.md).
"""

import json
import sys

from actors.task_manager import CreateTask, SetStatus, TaskManagerHandle

project_dir, session_id = sys.argv[1], "sess_20260101_000000_0001"
seen: dict[str, object] = {}

tasks = TaskManagerHandle.start(project_dir, session_id)
report = tasks.open("plan")
seen["opened"] = [report.lines, report.truncated_tail, report.available]
tasks.create_task("plan", "a", "Write the parser", owner="coder")
tasks.create_task("plan", "b", "Test it", owner="tester", deps=["a"])
tasks.set_status("plan", "a", "running")
tasks.set_status("plan", "a", "completed", result_summary="3 files parsed")
seqs = tasks.apply_changes(
    "plan",
    [
        CreateTask(task_id="c", title="Ship it", owner="shipper", deps=["b"]),
        SetStatus(task_id="b", to_status="running"),
    ],
)
seen["seqs"] = [len(seqs), seqs == sorted(seqs)]
seen["ready"] = tasks.ready("plan")
seen["blocked"] = tasks.blocked("plan")
seen["order"] = tasks.topological_order("plan")
seen["dependents"] = tasks.dependents("plan", "a")
seen["a"] = tasks.task("plan", "a").result_summary
seen["last_seq"] = tasks.last_seq("plan")
tasks.stop()

with TaskManagerHandle.start(project_dir, session_id) as again:
    reopened = again.open("plan")
    seen["replayed"] = [reopened.lines, reopened.available]
    seen["order_after"] = again.topological_order("plan")

print(json.dumps(seen, sort_keys=True))
