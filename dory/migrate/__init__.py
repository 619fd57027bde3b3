"""`dory migrate`: notes, chats and memories from other tools, brought into the corpus as runs (SPEC §10).

The layout: `source.py` opens what the user points at (folder, zip, file) as one safe tree;
`formats/` holds one reader per format, each turning the tree into `Item`s (model.py); `plan.py`
decides what is new and where it goes; `entities.py` clusters the entities readers observed into
canonical pages and claims; `run.py` writes it all with a manifest (`manifest.py`) that makes a run
idempotent, resumable and undoable (`undo.py`); `report.py` writes the run's report.
"""
