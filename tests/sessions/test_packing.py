"""Context packing: lanes, hard budget, protected messages, recall by query and weight, placeholders,
and `remind` giving archived text back byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dory.index.embedders.tokens import approx_token_count as count
from dory.sessions.packing import CHUNK_TOKENS, PackMessage, chunks_of, pack, remind


def conversation(n: int, filler: int = 20) -> list[PackMessage]:
    return [
        PackMessage(
            f"m-{i:012x}",
            "user" if i % 2 == 0 else "assistant",
            f"turn {i} on topic {i % 7}. " + "plain filler words " * filler,
        )
        for i in range(n)
    ]


def test_a_session_under_half_the_budget_passes_through_unscored() -> None:
    messages = conversation(6, filler=2)
    res = pack(messages, 2000, count, query="topic")
    assert res.lane == "pass_through"
    assert [item.id for item in res.items] == [m.id for m in messages]
    assert res.archived == [] and res.recalled == []


def test_the_budget_is_hard_and_the_last_messages_are_protected() -> None:
    messages = conversation(300)
    res = pack(messages, 1500, count, query="topic 3", reserve=100, min_recent=4)
    assert res.lane == "packed"
    assert res.tokens <= 1400 and res.available == 1400
    assert sum(item.tokens for item in res.items) == res.tokens
    assert res.protected == [m.id for m in messages[-4:]]
    kept = [item.id for item in res.items if item.kind == "message"]
    assert kept[-4:] == [m.id for m in messages[-4:]]


def test_the_relevant_old_turn_is_recalled_and_its_range_has_a_placeholder() -> None:
    messages = conversation(300)
    messages[10].text = "The office wifi password is hunter2; the router sits in room 4."
    res = pack(messages, 2000, count, query="what is the office wifi password?")
    assert "m-00000000000a" in res.recalled
    recalled = next(item for item in res.items if item.kind == "recalled")
    assert recalled.text == messages[10].text
    placeholder = next(item for item in res.items if item.kind == "placeholder")
    assert "m-000000000000" in placeholder.text and "dory context remind" in placeholder.text
    assert res.archived[0].first_id == "m-000000000000" and "m-00000000000a" in res.archived[0].recalled
    without_query = pack(messages, 2000, count)
    assert "m-00000000000a" not in without_query.recalled


def test_an_agent_weight_keeps_a_message_without_any_query() -> None:
    messages = conversation(300)
    messages[5].weight = 5.0
    assert "m-000000000005" in pack(messages, 2000, count).recalled
    messages[5].weight = 0.0
    assert "m-000000000005" not in pack(messages, 2000, count).recalled


def test_tool_output_leaves_before_a_conversation_turn_of_equal_relevance() -> None:
    messages = conversation(300)
    messages[20] = PackMessage("m-tool00000020", "tool", "deploy failed: disk quota exceeded", "tool_result")
    messages[22] = PackMessage("m-user00000022", "user", "deploy failed: disk quota exceeded")
    order = pack(messages, 2000, count, query="deploy failed disk quota").recalled
    assert "m-user00000022" in order
    tight = pack(messages, 600, count, query="deploy failed disk quota", min_recent=2)
    if tight.recalled:
        assert tight.recalled == ["m-user00000022"] or "m-user00000022" in tight.recalled


def test_a_long_message_is_cut_into_chunks_that_rebuild_it_exactly() -> None:
    text = "".join(f"line {i}: output \t value={i * 7}\r\n" for i in range(400)) + "tail without newline"
    message = PackMessage("m-0123456789ab", "tool", text, "tool_result")
    chunks = chunks_of(message, 0, count)
    assert len(chunks) > 1 and all(c.id == f"m-0123456789ab#{n}" for n, c in enumerate(chunks, start=1))
    assert "".join(c.text for c in chunks) == text
    assert all(c.tokens <= CHUNK_TOKENS + count("line 399: output \t value=2793\r\n") for c in chunks)


def test_remind_returns_archived_text_byte_for_byte() -> None:
    tricky = "  leading spaces\r\nCRLF line\n\n\ttab\u200b zero-width, emoji 🐟, trailing   \n"
    long = "".join(f"row {i} ✓ {'x' * (i % 13)}\n" for i in range(600))
    messages = [
        *conversation(100),
        PackMessage("m-aaaaaaaaaaaa", "user", tricky),
        PackMessage("m-bbbbbbbbbbbb", "tool", long, "tool_result"),
        *conversation(50),
    ]
    res = pack(messages, 1200, count)
    archived_ids = {r.first_id for r in res.archived}
    assert "m-000000000000" in archived_ids
    chunk_ids = [c.id for c in chunks_of(messages[101], 101, count)]
    found = remind(
        messages, ["m-aaaaaaaaaaaa", *chunk_ids, "m-bbbbbbbbbbbb", "m-nothere0000", "m-bbbbbbbbbbbb#999"], count
    )
    assert found["m-aaaaaaaaaaaa"][1].encode() == tricky.encode()
    assert found["m-bbbbbbbbbbbb"][1].encode() == long.encode()
    assert "".join(found[cid][1] for cid in chunk_ids).encode() == long.encode()
    assert "m-nothere0000" not in found and "m-bbbbbbbbbbbb#999" not in found


def test_system_and_summary_come_first_and_are_never_dropped() -> None:
    res = pack(
        conversation(300),
        1500,
        count,
        system="You are a careful agent.",
        summary="<continuation_summary>\n## Current State\n- halfway\n</continuation_summary>",
    )
    assert [item.kind for item in res.items[:2]] == ["system", "summary"]


@pytest.mark.parametrize("budget", [256, 700])
def test_when_even_the_protected_tail_cannot_fit_the_newest_part_is_kept_and_it_says_so(budget: int) -> None:
    messages = conversation(40, filler=30)
    res = pack(messages, budget, count, min_recent=10)
    assert res.tokens <= budget
    assert res.warnings and "do not fit the budget" in res.warnings[0]
    kept = [item.id for item in res.items if item.kind == "message"]
    assert kept and kept[-1] == messages[-1].id


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=120),
    budget=st.integers(256, 6000),
    min_recent=st.integers(0, 12),
    query=st.sampled_from([None, "", "topic 3", "word17 word3"]),
)
def test_the_packed_context_never_exceeds_the_budget(
    sizes: list[int], budget: int, min_recent: int, query: str | None
) -> None:
    messages = [
        PackMessage(
            f"m-{i:012x}", "tool" if i % 5 == 0 else "user", " ".join(f"word{(i * j) % 31}" for j in range(size))
        )
        for i, size in enumerate(sizes)
    ]
    res = pack(messages, budget, count, query=query, min_recent=min_recent, reserve=64)
    assert res.tokens <= res.available or res.warnings
    if res.lane == "packed" and not res.warnings:
        shown = {item.id for item in res.items if item.kind == "message"}
        archived = sum(r.messages for r in res.archived)
        assert len(shown) + archived == len(messages)
