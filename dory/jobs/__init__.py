"""The daemon (watcher, writer, scheduler) and the jobs it runs."""
