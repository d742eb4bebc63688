"""format_for_prompt: two sections, NEVER framing, ids, and the character budget."""

from memory import Lesson, format_for_prompt


def make(i: int, polarity: str = "do", size: int = 20) -> Lesson:
    return Lesson(
        id=f"id{i:06d}",
        type="architecture",
        trigger=f"trigger {i} " + "x" * size,
        fix=f"fix {i}",
        polarity=polarity,
    )


def test_two_sections_with_ids_and_never_framing():
    text = format_for_prompt([make(1), make(2, "dont"), make(3)])
    do, dont = text.split("\n\n")
    assert do.splitlines()[0] == "## Lessons from past builds (apply these):"
    assert do.splitlines()[1].startswith("- [id000001] [architecture] When: trigger 1")
    assert "-> Do: fix 1" in do and "[id000003]" in do
    assert dont.splitlines()[0] == "## Anti-patterns from past builds (NEVER do these):"
    assert dont.splitlines()[1].startswith("- [id000002] NEVER: trigger 2")
    assert "(Reason: fix 2)" in dont


def test_only_dont_lessons_give_only_the_never_section():
    assert format_for_prompt([make(1, "dont")]).startswith("## Anti-patterns")


def test_budget_caps_the_whole_text_and_drops_whole_lines_from_the_bottom():
    lessons = [make(i, "do" if i % 2 else "dont", size=200) for i in range(20)]
    text = format_for_prompt(lessons, max_chars=1000)
    assert len(text) <= 1000
    assert "[id000000]" in text and "[id000019]" not in text
    assert "more lesson(s) left out for space" in text
    for line in text.splitlines():
        if line.startswith("- ["):
            assert line.endswith(")") or "-> Do: fix" in line  # never cut mid-lesson


def test_empty_recall_gives_empty_text():
    assert format_for_prompt([]) == ""
