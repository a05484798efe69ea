"""Problem statements for generated tasks, written from what the failing tests printed: the errors they
raised and where in the library they surfaced, never the tests' names or files (which may be hidden), never a
line of the fix. Templated by default; a model (any `gym_swe.rollout.generators` backend) writes them when one
is given, and what it writes is held to the same rules."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from gym_swe.errors import GymSweError

MAX_FAILURES = 3
MAX_LINES = 14
MAX_LINE_CHARS = 200
SECTION = re.compile(r"^_{3,} (.+?) _{3,}$", re.MULTILINE)
FRAME = re.compile(r"^(\S+\.py):(\d+): in (\S+)$")
HIDDEN = "<a test>"
TEST_NAMED = re.compile(r"\b(?:test_\w+|Test[A-Z0-9_]\w*|\w+_test\.py)\b")


def section_name(test_id: str) -> str:
    """How pytest's failure section names a test: ``tests/a.py::Class::test[x]`` -> ``Class.test[x]``."""
    return ".".join(test_id.split("::")[1:])


def failure_sections(output: str) -> dict[str, str]:
    """pytest's failure sections (``--tb=short``) by the name in their header."""
    heads = list(SECTION.finditer(output))
    sections: dict[str, str] = {}
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(output)
        body = output[head.end() : end]
        body = body.split("\n=", 1)[0]  # the summary that follows the last section
        sections.setdefault(head.group(1), body)
    return sections


def what_failed(output: str, failing: Sequence[str], test_files: Iterable[str]) -> list[str]:
    """The lines that say what went wrong for the ``failing`` tests: the library frames the errors passed
    through and the error lines (pytest's ``E``), each once, for the first few tests."""
    tests = set(test_files)
    sections = failure_sections(output)
    shown: list[str] = []
    for test_id in failing:
        body = sections.get(section_name(test_id))
        if body is None:
            # a test cut at a space: its section's name starts with the id's
            prefix = section_name(test_id)
            body = next((text for name, text in sections.items() if name.startswith(prefix)), None)
        if body is None:
            continue
        for line in body.splitlines():
            frame = FRAME.match(line.strip())
            if frame and frame.group(1) not in tests and "test" not in frame.group(1).rsplit("/", 1)[-1]:
                shown.append(f"in {frame.group(3)} ({frame.group(1)})")
            elif line.startswith("E "):
                shown.append(line[1:].strip())
        if len({*shown}) >= MAX_LINES or failing.index(test_id) + 1 >= MAX_FAILURES:
            break
    unique = [line[:MAX_LINE_CHARS] for line in dict.fromkeys(line for line in shown if line)]
    return unique[:MAX_LINES]


def scrub(text: str, test_ids: Iterable[str], fix: str) -> str:
    """``text`` with no name of a test or test file in it (those of ``test_ids``, and any named as pytest
    names tests), and no line of the fix: a line of ``text`` that holds a line the fix adds is dropped
    whole."""
    names: set[str] = set()
    for test_id in test_ids:
        path, _, rest = test_id.partition("::")
        names.add(path)
        names.add(path.rsplit("/", 1)[-1])
        for part in rest.split("::"):
            names.add(part.split("[", 1)[0])
    for name in sorted((n for n in names if len(n) > 3), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", HIDDEN, text)
    text = TEST_NAMED.sub(HIDDEN, text)  # any other test, or a test's helper, by pytest's naming
    added = fix_lines(fix)
    kept = [line for line in text.splitlines() if not any(piece in line for piece in added)]
    return "\n".join(kept).strip() + "\n"


def fix_lines(fix: str) -> set[str]:
    """The lines the fix adds that say something (a bare ``return`` or bracket does not)."""
    lines = set()
    for line in fix.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            content = line[1:].strip()
            if len(content) >= 8 and re.search(r"[A-Za-z0-9]", content):
                lines.add(content)
    return lines


def templated(title: str, output: str, failing: Sequence[str], hidden_files: Iterable[str], fix: str) -> str:
    """The default statement: a title and what the failing tests printed."""
    lines = what_failed(output, failing, hidden_files)
    count = len(failing)
    body = (
        f"{title}\n\n"
        f"{count} check{'s' if count != 1 else ''} of the project's test suite that should pass "
        f"{'fail' if count != 1 else 'fails'}. What goes wrong:\n\n"
        + "```\n"
        + ("\n".join(lines) or "(the tests end in an error)")
        + "\n```\n\n"
        "Fix the library so that it behaves as intended; the tests are not to be changed.\n"
    )
    return scrub(body, failing, fix)


STATEMENT_PROMPT = """You write issue reports for a software project. A change broke some behaviour. \
Below is what the failing checks printed. Write a short issue (a title line, then 2-6 sentences) as a user \
would: what they did, what they expected, what happened. Do not name any test, test file or test function. \
Do not say how to fix it or quote code that would fix it.

What the failing checks printed:
{failures}
"""


def written_by_model(
    generator: Any,
    output: str,
    failing: Sequence[str],
    hidden_files: Iterable[str],
    fix: str,
    max_tokens: int = 400,
) -> str:
    """A statement a model wrote (``generator``: a `gym_swe.rollout.generators` Generator) from the failures,
    held to the same rules as the templated one: test names and lines of the fix are scrubbed out."""
    # what the model is shown is held to the rules too: it cannot repeat what it never saw
    failures = scrub("\n".join(what_failed(output, failing, hidden_files)) or "(an error)", failing, fix)
    text = complete(generator, STATEMENT_PROMPT.format(failures=failures), max_tokens)
    text = scrub(text.strip(), failing, fix)
    if len(text.strip()) < 20:
        raise GymSweError("the model wrote no usable statement (empty after the rules were applied)")
    return text


def complete(generator: Any, message: str, max_tokens: int) -> str:
    """What ``generator`` answers to one user ``message`` (its tokenizer's chat template, greedy)."""
    from gym_swe.rollout.generators import SamplingParams

    tokenizer = generator.tokenizer
    messages = [{"role": "user", "content": message}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        prompt = tokenizer.encode(text, add_special_tokens=False)
    else:  # a base model: the message as it is
        prompt = tokenizer.encode(message)
    sample = generator.generate([list(prompt)], SamplingParams(max_tokens=max_tokens, temperature=0.0))[0]
    if sample.error:
        raise GymSweError(f"the generator failed: {sample.error}")
    return str(sample.text)
