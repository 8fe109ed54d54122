"""``ClewSaver``: a LangGraph checkpointer (``BaseCheckpointSaver``) backed by clew's log.

Every LangGraph thread is a clew session (:mod:`actors.langgraph.threads`); ``put``
appends a ``checkpoint_saved`` event, ``put_writes`` a ``checkpoint_writes`` one, both
durable when the call returns. Reads fold the thread's events
(:class:`~actors.langgraph.thread_log.ThreadLog`). A thread whose stored events were
changed or removed, or whose values cannot be read back, raises
:class:`~actors.errors.CheckpointDamaged` naming the thread, the checkpoint or seq, and
what is wrong. See docs/langgraph.md.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from actors.errors import CheckpointDamaged
from actors.langgraph.listing import ListQuery, removal_for_runs, removal_keep_latest
from actors.langgraph.thread_log import ThreadLog
from actors.langgraph.threads import Threads, session_id_for
from actors.runtime.runtime import Runtime
from eventlog.graph_events import CheckpointSaved, CheckpointWrites, PendingWriteBlob
from eventlog.sqlite import Durability


class ClewSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer storing each thread as a clew session.

    Build it on an open :class:`~actors.runtime.runtime.Runtime` (``ClewSaver(rt)``: the
    runtime stays the caller's to close) or on a home (``ClewSaver.from_home(path)``:
    the saver opens the embedded SQLite home and closes it in :meth:`close`).
    """

    def __init__(self, runtime: Runtime, *, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        self.runtime = runtime
        self._threads = Threads(
            runtime.store, runtime.writer, runtime.clock, str(runtime.project_dir)
        )
        self._owns_runtime = False

    @classmethod
    def from_home(
        cls,
        home: Path | str,
        *,
        durability: Durability = "normal",
        serde: SerializerProtocol | None = None,
    ) -> ClewSaver:
        """Open (creating if needed) the clew home ``home`` and save threads there."""
        saver = cls(Runtime(home, durability=durability), serde=serde)
        saver._owns_runtime = True
        return saver

    def close(self) -> None:
        """Close the home if :meth:`from_home` opened it (a runtime passed in is left open)."""
        if self._owns_runtime:
            self.runtime.close()

    def __enter__(self) -> ClewSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def session_id(thread_id: str) -> str:
        """Return the clew session id of a LangGraph thread (for ``clew show`` and co)."""
        return session_id_for(thread_id)

    # --- writing ---------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint (``checkpoint_saved``); only the channels in ``new_versions``
        carry values, and a value extending its previous version is stored as the
        increment."""
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        saved: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = saved.pop("channel_values")
        meta = get_checkpoint_metadata(config, metadata)
        with self._threads.lock(thread_id):
            log = self._threads.log(thread_id, create=True)
            assert log is not None  # created
            blobs = [
                log.encode(
                    ns,
                    channel,
                    version,
                    self.serde.dumps_typed(values[channel])
                    if channel in values
                    else ("empty", b""),
                )
                for channel, version in new_versions.items()
            ]
            ctype, cdata = self.serde.dumps_typed(saved)
            mtype, mdata = self.serde.dumps_typed(meta)
            step = meta.get("step")
            run_id = meta.get("run_id")
            event = CheckpointSaved(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint["id"],
                parent_checkpoint_id=conf.get("checkpoint_id"),
                checkpoint_type=ctype,
                checkpoint=cdata,
                metadata_type=mtype,
                metadata=mdata,
                channels=blobs,
                step=step if isinstance(step, int) else None,
                source=str(meta.get("source", "")),
                run_id=str(run_id) if run_id is not None else None,
            )
            self._threads.append(log, [event])
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Save a task's pending writes (``checkpoint_writes``); a regular write already
        stored for ``(task_id, idx)`` is not stored again."""
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        checkpoint_id = str(conf["checkpoint_id"])
        with self._threads.lock(thread_id):
            log = self._threads.log(thread_id, create=True)
            assert log is not None  # created
            blobs = []
            for i, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, i)
                if idx >= 0 and log.has_write(ns, checkpoint_id, task_id, idx):
                    continue
                kind, data = self.serde.dumps_typed(value)
                blobs.append(PendingWriteBlob(idx=idx, channel=channel, type=kind, data=data))
            if not blobs:
                return
            event = CheckpointWrites(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                task_id=task_id,
                task_path=task_path,
                writes=blobs,
            )
            self._threads.append(log, [event])

    # --- reading ---------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Return the checkpoint ``config`` names (its ``checkpoint_id``, else the newest
        of the thread's namespace), or None."""
        conf = config["configurable"]
        thread_id = str(conf["thread_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        with self._threads.lock(thread_id):
            log = self._threads.log(thread_id)
            if log is None:
                return None
            saved = log.checkpoints.get(ns, {})
            checkpoint_id = get_checkpoint_id(config) or (max(saved) if saved else None)
            event = saved.get(checkpoint_id) if checkpoint_id else None
            return None if event is None else self._tuple(log, event)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Yield the checkpoints matching ``config`` (a thread, a namespace, an id; None:
        every thread), ``filter`` (metadata values) and ``before``, newest first."""
        query = ListQuery.of(config, before, limit)
        thread_ids = [query.thread_id] if query.thread_id else self._threads.thread_ids()
        for thread_id in thread_ids:
            with self._threads.lock(thread_id):
                log = self._threads.log(thread_id)
                found = [] if log is None else self._matching(log, query, filter)
            for tup in found:
                yield tup
                if query.count_one():
                    return
            if query.done():
                return

    def _matching(
        self, log: ThreadLog, query: ListQuery, meta_filter: dict[str, Any] | None
    ) -> builtins.list[CheckpointTuple]:
        found: builtins.list[CheckpointTuple] = []
        for event in query.candidates(log):
            if meta_filter:
                meta = self.serde.loads_typed((event.metadata_type, event.metadata))
                if not all(meta.get(k) == v for k, v in meta_filter.items()):
                    continue
            found.append(self._tuple(log, event))
            if query.limit is not None and len(found) >= query.remaining:
                break
        return found

    def _tuple(self, log: ThreadLog, event: CheckpointSaved) -> CheckpointTuple:
        try:
            return self._read_tuple(log, event)
        except CheckpointDamaged as e:
            raise CheckpointDamaged(f"checkpoint {event.checkpoint_id}: {e}") from e
        except ValueError as e:  # the serde's: bytes that decode to no value
            raise CheckpointDamaged(
                f"checkpoint {event.checkpoint_id} of LangGraph thread {event.thread_id!r}"
                f" (session {log.session_id}) cannot be read back: {e}"
            ) from e

    def _read_tuple(self, log: ThreadLog, event: CheckpointSaved) -> CheckpointTuple:
        ns = event.checkpoint_ns
        checkpoint = self.serde.loads_typed((event.checkpoint_type, event.checkpoint))
        values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            typed = log.value(ns, channel, version)
            if typed is not None:
                values[channel] = self.serde.loads_typed(typed)
        checkpoint["channel_values"] = values
        stored = log.writes.get((ns, event.checkpoint_id), {})
        ordered = sorted(stored.items(), key=lambda kv: (kv[1][3], kv[0][0], kv[0][1]))
        thread = {"thread_id": event.thread_id, "checkpoint_ns": ns}
        parent = event.parent_checkpoint_id
        return CheckpointTuple(
            config={"configurable": {**thread, "checkpoint_id": event.checkpoint_id}},
            checkpoint=checkpoint,
            metadata=self.serde.loads_typed((event.metadata_type, event.metadata)),
            parent_config={"configurable": {**thread, "checkpoint_id": parent}} if parent else None,
            pending_writes=[
                (task, channel, self.serde.loads_typed(typed))
                for task, channel, typed, _ in (w for _, w in ordered)
            ],
        )

    # --- deleting, copying, pruning --------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session for good (events, rows, artifact files)."""
        with self._threads.lock(thread_id):
            self._threads.delete(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Remove, in every thread, the checkpoints (and writes) of the runs ``run_ids``
        (one ``checkpoints_removed`` event per thread concerned)."""
        wanted = set(run_ids)
        if not wanted:
            return
        for thread_id in self._threads.thread_ids():
            with self._threads.lock(thread_id):
                log = self._threads.log(thread_id)
                if log is not None and (event := removal_for_runs(log, thread_id, wanted)):
                    self._threads.append(log, [event])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another (in the same order)."""
        with self._threads.lock(source_thread_id):
            source = self._threads.log(source_thread_id)
            if source is None:
                return
            events = self._threads.graph_events(source, target_thread_id)
        with self._threads.lock(target_thread_id):
            target = self._threads.log(target_thread_id, create=True)
            assert target is not None  # created
            if events:
                self._threads.append(target, events)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint; ``delete``: delete the
        threads (as :meth:`delete_thread`)."""
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self._threads.lock(thread_id):
                log = self._threads.log(thread_id)
                if log is not None and (event := removal_keep_latest(log, thread_id)):
                    self._threads.append(log, [event])

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Return the version after ``current``: a zero-padded counter (versions sort as
        text) and a random suffix, so that two branches of a thread (a fork from an older
        checkpoint) never give one channel the same version for different values."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:012}.{os.urandom(3).hex()}"

    # --- async: the same calls, off the event loop -----------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for tup in found:
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)
