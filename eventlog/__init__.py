"""The durable truth of clew: vocabulary, the SQLite event store, the writer, the Task WAL."""
