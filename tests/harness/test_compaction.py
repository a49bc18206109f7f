"""Where compaction cuts, as a property over random histories: a tool call and its results are
never separated, the newest item is kept, what is kept fits whenever anything can, and no more
is cut than needed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from accord.harness.core._compaction import Item, cut


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    """Messages, and model steps each followed by the results of the tools they called."""
    items: list[Item] = []
    for _ in range(draw(st.integers(1, 30))):
        items.append(Item(draw(st.integers(1, 500))))  # a message or a model step
        for _ in range(draw(st.integers(0, 3))):  # the step's tool calls' results
            items.append(Item(draw(st.integers(1, 2000)), tool_result=True))
    return items


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 20_000), st.integers(0, 300))
def test_a_cut_never_separates_a_call_from_its_results(
    items: list[Item], budget: int, reserve: int
) -> None:
    index = cut(items, budget, reserve)
    total = sum(item.tokens for item in items)
    if total <= budget:
        assert index == 0  # nothing to compact
        return
    # Never just before a result (its call is before it): pairs stay on one side.
    assert index == 0 or not items[index].tool_result
    assert index < len(items)  # the newest item is kept
    kept = sum(item.tokens for item in items[index:])
    allowed = [i for i in range(1, len(items)) if not items[i].tool_result]
    fitting = [i for i in allowed if sum(x.tokens for x in items[i:]) + reserve <= budget]
    if fitting:
        assert kept + reserve <= budget  # it fits
        assert index == min(fitting)  # and no more was cut than needed
    elif allowed:
        assert index == max(allowed)  # as little kept as the rules allow


def test_a_small_history_is_kept_whole() -> None:
    assert cut([Item(10), Item(20)], budget=100) == 0


def test_a_call_with_its_results_moves_as_one() -> None:
    items = [Item(50), Item(10), Item(40, tool_result=True), Item(40, tool_result=True), Item(5)]
    # Cutting before the step (index 1) keeps 95 tokens; the results cannot start the kept part.
    assert cut(items, budget=100) == 1
    assert cut(items, budget=50) == 4
