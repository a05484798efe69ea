"""Bugs a model writes (SWE-smith's LM modifications): a function of the repository the tests mention is
given to a model through gym_swe's generators (any `make_generator` backend: a local vLLM server, a hosted
endpoint, transformers), which rewrites it with a subtle bug; the rewrite replaces the function, and becomes
a task on the same rule as a mutation: some passing test must then fail."""

from __future__ import annotations

import ast
import hashlib
import random
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gym_swe.generate.drafts import Baseline, Draft, Rejected, injected
from gym_swe.generate.mutate import (
    Offsets,
    functions_of,
    is_library_file,
    is_test_file,
    package_of,
    tested_names,
)
from gym_swe.generate.repository import SourceRepository
from gym_swe.generate.statements import complete

MIN_LINES, MAX_LINES = 3, 60
"""Functions of this many lines are rewritten: a shorter one has no room for a subtle bug, a longer one
costs a model too many tokens to write back."""
MAX_TOKENS = 1500
"""The most a rewrite may take; a function's own is about its length, so it gets three times that."""
PROMPT = """Here is a Python function from a project:

```python
{code}
```

Rewrite this function so that it has a subtle bug: it must still run and look plausible, keep the same \
name, signature and docstring, but give a wrong result in some cases. Do not add comments that point at \
the bug. Answer with the whole rewritten function in one ```python block and nothing else."""
CODE_BLOCK = re.compile(r"```(?:python|py)?\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Target:
    path: str
    function: str
    start: int
    """Where the function's text starts (its first line's start, decorators included) and ends (after its
    last line), as character offsets."""
    end: int
    indent: str

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.path}\0{self.function}".encode()).hexdigest()[:10]


def targets(path: str, source: str, names: set[str]) -> Iterator[Target]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    offsets = Offsets(source)
    module = {part.removesuffix(".py") for part in path.split("/")} - {"__init__", "src"}
    for qualname, node in functions_of(tree):
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # type: ignore[attr-defined]
        last = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        if not MIN_LINES <= last - first + 1 <= MAX_LINES or not ({*qualname.split("."), *module} & names):
            continue
        start, end = offsets.starts[first - 1], offsets.starts[min(last, len(offsets.lines))]
        line = source[start:end].splitlines()[0]
        yield Target(path, qualname, start, end, line[: len(line) - len(line.lstrip())])


def candidates(repo: SourceRepository, seed: int = 0) -> list[Target]:
    files = repo.files()
    names = tested_names({p: repo.read(p) for p in files if p.endswith(".py") and is_test_file(p)})
    found = [
        target for path in files if is_library_file(path) for target in targets(path, repo.read(path), names)
    ]
    random.Random(seed).shuffle(found)
    return found


def rewritten(answer: str, target: Target) -> str:
    """The function the model's ``answer`` holds, indented as the original; `Rejected` when it holds none of
    that name."""
    blocks = CODE_BLOCK.findall(answer)
    code = textwrap.dedent(blocks[0] if blocks else answer).strip("\n") + "\n"
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise Rejected(f"the model's rewrite is not Python ({error.msg}, line {error.lineno})") from None
    name = target.function.rsplit(".", 1)[-1]
    if (
        len(tree.body) != 1
        or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef))
        or (tree.body[0].name != name)
    ):
        raise Rejected(f"the model's answer is not one function named {name}")
    return textwrap.indent(code, target.indent)


def draft(repo: SourceRepository, target: Target, base: Baseline, timeout: float, generator: Any) -> Draft:
    source = repo.read(target.path)
    original = source[target.start : target.end]
    budget = min(MAX_TOKENS, 3 * len(generator.tokenizer.encode(original, add_special_tokens=False)) + 64)
    answer = complete(generator, PROMPT.format(code=textwrap.dedent(original)), budget)
    new = rewritten(answer, target)
    if ast.dump(ast.parse(textwrap.dedent(new))) == ast.dump(ast.parse(textwrap.dedent(original))):
        raise Rejected("the model's rewrite is the same code")
    changed = source[: target.start] + new + source[target.end :]
    try:
        compile(changed, target.path, "exec")
    except SyntaxError as error:
        raise Rejected(f"the file does not compile with the rewrite ({error.msg})") from None
    return injected(
        repo,
        f"rewrite-{target.key}",
        {target.path: changed},
        base,
        timeout,
        f"Wrong results from `{package_of(target.path)}`",
        {
            "method": "rewrite",
            "file": target.path,
            "function": target.function,
            "model": getattr(generator, "name", ""),
        },
    )
