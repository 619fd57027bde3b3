"""`dory connect` / `dory disconnect`: Dory in an agent harness's configuration, and back out.

harnesses.py says which files each harness reads and what Dory adds to them; jsonfile.py,
servers.py, hooks.py and tomlfile.py make those edits in a file's own format and style; apply.py
writes them safely (backups, compare-and-swap) and manifest.py remembers what to undo.
"""
