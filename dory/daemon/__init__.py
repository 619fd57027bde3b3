"""The daemon: the one long-running process per corpus that owns the index (watcher, writer,
embedder, scheduler, control socket). It calls the service API like every surface."""
