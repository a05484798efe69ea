"""What a tool is: a name, an OpenAI function schema, and ``run(sandbox, **arguments) -> ToolResult``.

Arguments are checked against the schema before a tool runs, and every mistake (an unknown argument, a
missing one, a wrong type, a value outside an enum) comes back as a `ToolResult` the model can read and act
on, never as an exception to the env. Values that arrive as text (Qwen3-Coder's XML parameters) are coerced
to the declared type where that is unambiguous: ``"30"`` for an integer, ``"[1, 20]"`` for an array.
"""

from __future__ import annotations

import difflib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gym_swe.errors import SandboxCrashedError, SandboxError, ToolError
from gym_swe.sandbox.base import Sandbox


@dataclass(frozen=True)
class ToolResult:
    """What a tool call did, as the model will see it."""

    output: str
    """Text for the model (the next observation is built from it)."""
    ok: bool = True
    """False when the call failed: bad arguments, a missing file, a str_replace that matched nothing."""
    done: bool = False
    """True when the call ends the episode (``submit``)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """For logs and ``info`` (exit codes, durations), never shown to the model."""


def bound_text(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` within ``max_chars``, saying how much was left out between."""
    if len(text) <= max_chars:
        return text
    half = max(max_chars // 2, 1)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut here ...]\n{text[-half:]}"


class Tool(ABC):
    """A tool the agent can call. Subclasses set ``name``, ``description``, ``parameters`` and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    """JSON schema of the arguments (an ``object`` schema, OpenAI function style)."""

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema of this tool."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def __call__(self, sandbox: Sandbox, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Check ``arguments`` and run; argument and tool errors come back as a failed `ToolResult`, and so
        does a request the sandbox refused (a path it cannot open, say). Only a crashed sandbox raises."""
        try:
            checked = check_arguments(self.name, self.parameters, arguments)
            return self.run(sandbox, **checked)
        except ToolError as error:
            return ToolResult(output=str(error), ok=False)
        except SandboxCrashedError:
            raise
        except SandboxError as error:
            return ToolResult(output=f"{self.name}: the sandbox refused the request: {error}", ok=False)

    # `*args: Any, **arguments: Any` lets each tool name its own arguments (the type checker reads it as
    # "any signature"); they come as keywords, checked against ``parameters`` first.
    @abstractmethod
    def run(self, sandbox: Sandbox, *args: Any, **arguments: Any) -> ToolResult:
        """Do the work. Raise `ToolError` with a model-facing message for a misuse."""

    def reset(self) -> None:  # noqa: B027 (most tools keep no state: doing nothing is the right default)
        """Forget per-episode state (the editor's undo history). Called by the env at reset."""


# -- argument checking --------------------------------------------------------------------------------------
_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def describe_parameters(parameters: Mapping[str, Any]) -> str:
    required = set(parameters.get("required", ()))
    parts = []
    for name, spec in parameters.get("properties", {}).items():
        kind = spec.get("type", "any")
        parts.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(parts) if parts else "none"


def check_arguments(tool: str, parameters: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Validate and coerce ``arguments`` against an object schema; raise `ToolError` saying what is wrong."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolError(
            f"{tool}: arguments must be an object of named values, got {type(arguments).__name__}. "
            f"Arguments of {tool}: {describe_parameters(parameters)}."
        )
    properties: Mapping[str, Any] = parameters.get("properties", {})
    checked: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None and key in properties:
            continue  # an explicit null is an absent optional (models fill unused parameters with null)
        if key not in properties:
            close = difflib.get_close_matches(str(key), list(properties), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ToolError(
                f"{tool}: unexpected argument {key!r}.{hint} Arguments of {tool}: "
                f"{describe_parameters(parameters)}."
            )
        checked[key] = _coerce(tool, key, properties[key], value)
    missing = [name for name in parameters.get("required", ()) if name not in checked]
    if missing:
        raise ToolError(
            f"{tool}: missing required argument{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)}. Arguments of {tool}: {describe_parameters(parameters)}."
        )
    return checked


def _lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` (what a JSON "\\ud800" decodes to), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return text[error.start]
    return None


def _coerce(tool: str, key: str, spec: Mapping[str, Any], value: Any) -> Any:
    kind = spec.get("type")
    original = value
    if kind == "integer":
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        ok = isinstance(value, bool)
    elif kind in ("array", "object"):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        ok = isinstance(value, list) if kind == "array" else isinstance(value, dict)
        if ok and kind == "array" and "items" in spec:
            value = [_coerce(tool, f"{key}[{i}]", spec["items"], item) for i, item in enumerate(value)]
    elif kind == "string":
        ok = isinstance(value, str)
        if ok and (bad := _lone_surrogate(value)) is not None:
            raise ToolError(
                f"{tool}: argument {key!r} holds {bad!r}, a lone surrogate: not a character, and no file or "
                "command can hold it. Write the character itself (or its \\uXXXX pair)."
            )
    else:
        ok = True
    if not ok:
        shown = repr(original) if len(repr(original)) < 80 else repr(original)[:77] + "..."
        raise ToolError(
            f"{tool}: argument {key!r} must be {_JSON_TYPES.get(kind or '', kind)}, "
            f"got {type(original).__name__} {shown}."
        )
    allowed = spec.get("enum")
    if allowed is not None and value not in allowed:
        close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ToolError(
            f"{tool}: argument {key!r} must be one of {', '.join(repr(a) for a in allowed)}; "
            f"got {value!r}.{hint}"
        )
    return value
