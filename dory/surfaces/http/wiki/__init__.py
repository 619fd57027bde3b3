"""`/wiki`: the corpus as read-only HTML for people (routes.py), safe to show whatever a note holds."""
