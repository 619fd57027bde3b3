"""`--in all`: durable hits and session turns fused as one set under one policy (issue 19)."""

from __future__ import annotations

from dory.config import SearchSettings
from dory.models import ReindexRequest, SearchHit, SearchRequest, StageScores
from dory.search.policy import RankingPolicy
from dory.sessions.recall import merge

TRANSCRIPT = """---
title: Ops chat
---

# Ops chat

## Session 1 (3 March 2025)

**Ana** (D1:1): The disk on the web box filled up again overnight.

**Ben** (D1:2): Set up nginx log rotation with logrotate: rotate nginx logs daily, keep 14, compress.

**Ana** (D1:3): Thanks, I will check it tomorrow.
"""


def hit(
    path: str, bm25: int | None, cosine: float | None = None, factor: float | None = 1.0, **assist: float
) -> SearchHit:
    explain = StageScores(bm25_rank=bm25, vector_score=cosine, policy_factor=factor, final=0.0, **assist)
    return SearchHit(
        path=path,
        title=path,
        chunk_id=f"{path}#1",
        start_line=1,
        end_line=1,
        heading_path=[],
        snippet="",
        evidence_class="session" if path.startswith("logs/") else "note",
        confidence="low",
        score=0.0,
        explain=explain,
    )


def test_a_turn_first_by_meaning_rises_above_durable_notes_that_only_share_a_word() -> None:
    durable = [hit(f"notes/n{i}.md", bm25=i, cosine=0.2) for i in range(1, 9)]
    turn = hit("logs/sessions/ops/chat.md", bm25=1, cosine=0.8)
    merged = [h.path for h in merge(durable, [turn], SearchSettings(), RankingPolicy(), 10)]
    # Merged by final position it came after the eighth note. Fused, the notes the retrievers put
    # close to it stay above it (the policy prefers curated notes at near-equal evidence: ×0.75 on
    # `logs/`), and the bound keeps it above every note both lists rank clearly lower.
    assert merged.index("logs/sessions/ops/chat.md") == 3
    assert [p for p in merged if p != "logs/sessions/ops/chat.md"] == [h.path for h in durable]


def test_each_side_keeps_its_order_and_k_is_honoured() -> None:
    durable = [hit(f"notes/n{i}.md", bm25=i) for i in range(1, 6)]
    turns = [hit(f"logs/sessions/a/s{i}.md", bm25=i) for i in range(1, 6)]
    merged = [h.path for h in merge(durable, turns, SearchSettings(), RankingPolicy(), 6)]
    assert len(merged) == 6
    assert [p for p in merged if p.startswith("notes/")] == [
        f"notes/n{i}.md" for i in range(1, 7) if f"notes/n{i}.md" in merged
    ]
    assert [p for p in merged if p.startswith("logs/")] == sorted(p for p in merged if p.startswith("logs/"))


def test_the_best_turn_is_not_buried_under_notes_that_merely_mention_the_word(lexical_service) -> None:
    """The README's nginx example: merged by final position, the right turn came ninth."""
    notes = {f"notes/n{i}.md": f"# Note {i}\n\nThe nginx box number {i} is in rack {i}.\n" for i in range(10)}
    svc = lexical_service({**notes, "logs/sessions/ops/box/chat.md": TRANSCRIPT})
    svc.reindex(ReindexRequest())
    res = svc.search(SearchRequest(query="nginx log rotation logrotate", mode="bm25", corpus="all", record=False))
    paths = [h.path for h in res.hits]
    turn_at = paths.index("logs/sessions/ops/box/chat.md")
    # Lexically the turn is first among turns and the notes are near-equals; interleaved, it ranks
    # second, so the bound keeps it above every note past fourth.
    assert turn_at <= 4, paths
    assert res.hits[turn_at].turn is not None and res.hits[turn_at].explain is None


def test_a_note_only_llm_expansion_found_keeps_that_evidence_in_the_merge() -> None:
    plain = [hit(f"notes/n{i}.md", bm25=i) for i in range(1, 4)]
    by_variant = hit("notes/automobile.md", bm25=None, expanded_rank=1)
    by_hypothetical = hit("notes/engine.md", bm25=None, hyde_score=0.7)
    turns = [hit(f"logs/sessions/a/s{i}.md", bm25=i + 5) for i in range(1, 6)]
    merged = merge([*plain, by_variant, by_hypothetical], turns, SearchSettings(), RankingPolicy(), 10)
    paths = [h.path for h in merged]
    # The hypothetical's cosine counts as a vector score (first of that list); the variant match
    # comes after every plain keyword match of its side. Without this both had no fused score and
    # fell below every transcript.
    assert paths[:5] == ["notes/n1.md", "notes/engine.md", "notes/n2.md", "notes/n3.md", "notes/automobile.md"]
    assert all(h.score > 0 for h in merged)
