"""PDDL text to S-expressions: lower-cased tokens with their lines, comments skipped, and
unbalanced parentheses refused with the line to look at."""

from __future__ import annotations

import pytest

from camp_planner.core.errors import CampError
from camp_planner.pddl.sexpr import SList, Token, read_sexprs, show


def test_tokens_are_lower_cased_and_keep_their_lines() -> None:
    (top,) = read_sexprs("(Define ; a comment (ignored)\n  (Domain D))", "d.pddl")
    assert isinstance(top, SList) and top.line == 1
    head, inner = top.items
    assert head == Token("define", 1)
    assert isinstance(inner, SList) and inner.line == 2
    assert inner.items == (Token("domain", 2), Token("d", 2))
    assert show(inner) == "(domain ...)" and show(head) == "'define'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(a (b)\n\n", "d.pddl:1: unbalanced parentheses: the '(' on this line is never closed"),
        ("(a)\n)", "d.pddl:2: unbalanced parentheses: unexpected ')'"),
    ],
)
def test_unbalanced_parentheses_name_the_line(text: str, message: str) -> None:
    with pytest.raises(CampError) as info:
        read_sexprs(text, "d.pddl")
    assert str(info.value) == message
