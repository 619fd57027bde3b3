"""Optional LLM help for search (SPEC §4), off by default: query expansion (expand.py) and a bounded
rerank of the top results (rerank.py), each one deadline-bounded call through the [llm] client
(call.py), glued into a search by assist.py. Without an LLM, or when it fails, search answers as if
it had not been asked, and says so in a warning."""
