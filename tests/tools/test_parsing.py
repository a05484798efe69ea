"""Tests for gym_swe.tools.parsing, the text -> tool-call grammar.

The fixtures are what each model family emits on coding tasks; the syntax was checked against the chat
templates in ../shared/data. The error table checks that every malformed call becomes a model-facing
message. The property tests check that no input makes the parser raise.
"""

from __future__ import annotations

import json
import keyword
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gym_swe.tools.parsing import ParsedCalls, ParseError, ToolCall, calls_from_message, parse_tool_calls

TOOLS = ["bash", "str_replace_editor", "submit"]
SHARED = Path(__file__).resolve().parents[2].parent / "shared"


def C(name: str, arguments: dict[str, Any], fmt: str, call_id: str | None = None) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=call_id, format=fmt)


def case(case_id: str, text: str, *expected: Any) -> Any:
    return pytest.param(text, *expected, id=case_id)


VIEW = {"command": "view", "path": "/workspace/solution.py"}
PYTEST = {"command": "python -m pytest -q"}

# ---------------------------------------------------------------------------------------------------------
# Realistic outputs, per model family
# ---------------------------------------------------------------------------------------------------------

FORMAT_CASES = [
    # --- Hermes / Qwen2.5 / Qwen3 -----------------------------------------------------------------------
    case(
        "qwen2.5-coder-bash-after-prose",
        "I'll start by exploring the repository structure to find the date utilities.\n<tool_call>\n"
        '{"name": "bash", "arguments": '
        '{"command": "find /testbed -name \\"*.py\\" -path \\"*utils*\\" | head -20"}}\n</tool_call>',
        [C("bash", {"command": 'find /testbed -name "*.py" -path "*utils*" | head -20'}, "hermes")],
    ),
    case(
        "qwen2.5-two-calls-in-order",
        '<tool_call>\n{"name": "str_replace_editor", "arguments": {"command": "view", '
        '"path": "/workspace/solution.py"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "bash", "arguments": {"command": "python -m pytest -q"}}\n'
        "</tool_call><|im_end|>",
        [C("str_replace_editor", VIEW, "hermes"), C("bash", PYTEST, "hermes")],
    ),
    case(
        "qwen2.5-str-replace-multiline-code",
        '<tool_call>\n{"name": "str_replace_editor", "arguments": {"command": "str_replace", '
        '"path": "/workspace/solution.py", '
        '"old_str": "            if idx != idx2:\\n                distance = elem - elem2\\n", '
        '"new_str": "            if idx != idx2:\\n                distance = abs(elem - elem2)\\n"}}\n'
        "</tool_call>",
        [
            C(
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/workspace/solution.py",
                    "old_str": "            if idx != idx2:\n                distance = elem - elem2\n",
                    "new_str": "            if idx != idx2:\n                distance = abs(elem - elem2)\n",
                },
                "hermes",
            )
        ],
    ),
    case(
        "qwen3-think-block-then-call",
        "<think>\nThe test `test_has_close_elements` fails: the loop computes elem - elem2 without abs(), "
        "so a negative\ndistance always passes `< threshold`. Writing <tool_call> right away would be "
        "premature; view the file first.\n</think>\n\n<tool_call>\n"
        '{"name": "str_replace_editor", "arguments": {"command": "view", "path": "/workspace/solution.py"}}\n'
        "</tool_call>",
        [C("str_replace_editor", VIEW, "hermes")],
    ),
    case(
        "qwen3-2507-close-think-only",
        "Okay, the user wants the date parsing bug fixed. I could submit right away with\n"
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>\nbut let me run the failing test first.\n'
        "</think>\n\n"
        "I'll run the test suite first.\n\n<tool_call>\n"
        '{"name": "bash", "arguments": {"command": "cd /testbed && python -m pytest tests/test_dates.py -x -q'
        ' 2>&1 | tail -20"}}\n</tool_call>',
        [
            C(
                "bash",
                {"command": "cd /testbed && python -m pytest tests/test_dates.py -x -q 2>&1 | tail -20"},
                "hermes",
            )
        ],
    ),
    case(
        "qwen3-arguments-as-json-string",
        r'<tool_call>{"name": "bash", "arguments": "{\"command\": \"grep -rn \\\"def parse\\\" '
        r'src/\"}"}</tool_call>',
        [C("bash", {"command": 'grep -rn "def parse" src/'}, "hermes")],
    ),
    case(
        "qwen3-submit-empty-arguments",
        "<think>\nAll 12 tests pass now, so the fix is complete.\n</think>\n\n"
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
        [C("submit", {}, "hermes")],
    ),
    case(
        "qwen-unicode-and-escaped-quotes",
        '<tool_call>\n{"name": "str_replace_editor", "arguments": {"command": "create", "path": '
        '"/workspace/greet.py", '
        r'"file_text": "def greet(name: str) -> str:\n    \"\"\"Return a greeting \u2014 caf\u00e9 '
        r"style.\"\"\"\n"
        r'    return f\"Bonjour, {name}! \\o/ \u4f60\u597d\"\n"}}' + "\n</tool_call>",
        [
            C(
                "str_replace_editor",
                {
                    "command": "create",
                    "path": "/workspace/greet.py",
                    "file_text": 'def greet(name: str) -> str:\n    """Return a greeting — café style."""\n'
                    '    return f"Bonjour, {name}! \\o/ 你好"\n',
                },
                "hermes",
            )
        ],
    ),
    case(
        "hermes-parameters-synonym",
        '<tool_call>\n{"name": "bash", "parameters": {"command": "git diff --stat", "timeout": '
        "60}}\n</tool_call>",
        [C("bash", {"command": "git diff --stat", "timeout": 60}, "hermes")],
    ),
    case(
        "hermes-unclosed-at-stop-token",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "python -m pytest -q"}}\n',
        [C("bash", PYTEST, "hermes")],
    ),
    case(
        "hermes-closing-tag-inside-json-string",
        '<tool_call>\n{"name": "bash", "arguments": '
        '{"command": "grep -n \\"</tool_call>\\" p.py"}}\n</tool_call>',
        [C("bash", {"command": 'grep -n "</tool_call>" p.py'}, "hermes")],
    ),
    case(
        "hermes-opening-tag-inside-json-string",
        '<tool_call>\n{"name": "bash", "arguments": '
        '{"command": "grep -rn \\"<tool_call>\\" src/"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
        [C("bash", {"command": 'grep -rn "<tool_call>" src/'}, "hermes"), C("submit", {}, "hermes")],
    ),
    case(
        "hermes-two-objects-in-one-block",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n{"name": "submit", "arguments": {}}\n'
        "</tool_call>",
        [C("bash", {"command": "ls"}, "hermes"), C("submit", {}, "hermes")],
    ),
    case(
        "hermes-json-fenced-inside-tags",
        '<tool_call>\n```json\n{"name": "bash", "arguments": {"command": "ls"}}\n```\n</tool_call>',
        [C("bash", {"command": "ls"}, "hermes")],
    ),
    # --- Qwen3-Coder XML --------------------------------------------------------------------------------
    case(
        "qwen3-coder-view",
        "I'll start by viewing the file to understand the bug.\n\n"
        "<tool_call>\n<function=str_replace_editor>\n"
        "<parameter=command>\nview\n</parameter>\n<parameter=path>\n/workspace/solution.py\n</parameter>\n"
        "</function>\n</tool_call>",
        [C("str_replace_editor", VIEW, "qwen3_coder")],
    ),
    case(
        "qwen3-coder-code-verbatim",
        """<tool_call>
<function=str_replace_editor>
<parameter=command>
str_replace
</parameter>
<parameter=path>
/testbed/src/compare.py
</parameter>
<parameter=old_str>
    if a < b and b > c:
        return "x"

</parameter>
<parameter=new_str>
    if a <= b and b >= c:
        return 'y'  # "quoted" </parameter> inside a comment
    return {"json": [1, 2]}
</parameter>
</function>
</tool_call>""",
        [
            C(
                "str_replace_editor",
                {
                    "command": "str_replace",
                    "path": "/testbed/src/compare.py",
                    "old_str": '    if a < b and b > c:\n        return "x"\n',
                    "new_str": "    if a <= b and b >= c:\n"
                    "        return 'y'  # \"quoted\" </parameter> inside a"
                    ' comment\n    return {"json": [1, 2]}',
                },
                "qwen3_coder",
            )
        ],
    ),
    case(
        "qwen3-coder-two-calls-values-stay-strings",
        "Let me run the tests, then submit.\n<tool_call>\n<function=bash>\n<parameter=command>\n"
        'cd /testbed && python -m pytest tests/ -q -k "parse and not slow"\n</parameter>\n'
        "<parameter=timeout>\n120\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=submit>\n</function>\n</tool_call>",
        [
            C(
                "bash",
                {
                    "command": 'cd /testbed && python -m pytest tests/ -q -k "parse and not slow"',
                    "timeout": "120",
                },
                "qwen3_coder",
            ),
            C("submit", {}, "qwen3_coder"),
        ],
    ),
    case(
        "qwen3-coder-without-wrapper",
        "<function=bash>\n<parameter=command>\nls -la /workspace\n</parameter>\n</function>",
        [C("bash", {"command": "ls -la /workspace"}, "qwen3_coder")],
    ),
    case(
        "qwen3-coder-value-quotes-the-tags",
        "<tool_call>\n<function=str_replace_editor>\n<parameter=command>\ncreate\n</parameter>\n"
        '<parameter=file_text>\nOPEN = "<tool_call>"\nFUNC = "<function="\n'
        "</parameter>\n</function>\n</tool_call>",
        [
            C(
                "str_replace_editor",
                {"command": "create", "file_text": 'OPEN = "<tool_call>"\nFUNC = "<function="'},
                "qwen3_coder",
            )
        ],
    ),
    # --- Llama 3.x --------------------------------------------------------------------------------------
    case(
        "llama3.1-whole-message-json",
        '{"name": "bash", "parameters": {"command": "python -m pytest -q"}}',
        [C("bash", PYTEST, "llama3_json")],
    ),
    case(
        "llama3.1-json-with-eot",
        '{"name": "str_replace_editor", "parameters": {"command": "view", "path": '
        '"/workspace/solution.py"}}<|eot_id|>',
        [C("str_replace_editor", VIEW, "llama3_json")],
    ),
    case(
        "llama3.3-python-tag-json",
        '<|python_tag|>{"name": "str_replace_editor", "parameters": {"command": "view", '
        '"path": "/workspace/solution.py", "view_range": [1, 40]}}<|eom_id|>',
        [C("str_replace_editor", {**VIEW, "view_range": [1, 40]}, "llama3_json")],
    ),
    case(
        "llama3-type-function-object",
        '{"type": "function", "name": "bash", "parameters": {"command": "git diff"}}',
        [C("bash", {"command": "git diff"}, "llama3_json")],
    ),
    case(
        "llama3-semicolon-separated",
        '{"name": "bash", "parameters": {"command": "ls"}}; {"name": "bash", "parameters": {"command": '
        '"cat setup.py"}}',
        [C("bash", {"command": "ls"}, "llama3_json"), C("bash", {"command": "cat setup.py"}, "llama3_json")],
    ),
    case(
        "llama3-newline-separated-with-submit",
        '{"name": "bash", "parameters": {"command": "pip install -e ."}}\n{"name": "submit", "parameters": '
        "{}}",
        [C("bash", {"command": "pip install -e ."}, "llama3_json"), C("submit", {}, "llama3_json")],
    ),
    case(
        "llama3.1-python-tag-builtin-call",
        '<|python_tag|>bash.call(command="ls -la /workspace")',
        [C("bash", {"command": "ls -la /workspace"}, "python_tag")],
    ),
    case(
        "llama3.1-python-tag-plain-call",
        '<|python_tag|>bash(command="python -m pytest -q", timeout=120)<|eom_id|>',
        [C("bash", {**PYTEST, "timeout": 120}, "python_tag")],
    ),
    case(
        "llama3.1-custom-tool-function-tag",
        '<function=bash>{"command": "ls /workspace"}</function>',
        [C("bash", {"command": "ls /workspace"}, "llama3_json")],
    ),
    # --- Mistral ----------------------------------------------------------------------------------------
    case(
        "mistral-v0.3-list-with-id",
        '[TOOL_CALLS] [{"name": "bash", "arguments": {"command": "grep -rn \\"TODO\\" ."}, "id": '
        '"a1B2c3D4e"}]</s>',
        [C("bash", {"command": 'grep -rn "TODO" .'}, "mistral", "a1B2c3D4e")],
    ),
    case(
        "mistral-nemo-two-calls",
        '[TOOL_CALLS][{"name": "str_replace_editor", "arguments": {"command": "view", "path": '
        '"/workspace/solution.py"}, '
        '"id": "Xy12Ab34C"}, {"name": "bash", "arguments": {"command": "python -m pytest -q"}, "id": '
        '"Qw9Er8Ty7"}]',
        [C("str_replace_editor", VIEW, "mistral", "Xy12Ab34C"), C("bash", PYTEST, "mistral", "Qw9Er8Ty7")],
    ),
    case(
        "devstral-args",
        "I'll look at the implementation first.\n\n[TOOL_CALLS]str_replace_editor[ARGS]"
        '{"command": "view", "path": "/testbed/django/db/models/query.py", "view_range": [1200, 1260]}',
        [
            C(
                "str_replace_editor",
                {"command": "view", "path": "/testbed/django/db/models/query.py", "view_range": [1200, 1260]},
                "mistral",
            )
        ],
    ),
    case(
        "devstral-two-calls-submit",
        '[TOOL_CALLS]bash[ARGS]{"command": "cd /testbed && git status"}[TOOL_CALLS]submit[ARGS]{}</s>',
        [C("bash", {"command": "cd /testbed && git status"}, "mistral"), C("submit", {}, "mistral")],
    ),
    case(
        "mistral-small-3.2-call-id",
        '[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{"command": "grep -rn \\"def test_\\" tests/ | head"}',
        [C("bash", {"command": 'grep -rn "def test_" tests/ | head'}, "mistral", "a1b2c3d4e")],
    ),
    # --- Gemma tool_code --------------------------------------------------------------------------------
    case(
        "gemma-tool-code-fence",
        "I will list the files in the workspace first.\n\n"
        '```tool_code\nbash(command="ls -la /workspace")\n```',
        [C("bash", {"command": "ls -la /workspace"}, "tool_code")],
    ),
    case(
        "gemma-print-default-api",
        '```tool_code\nprint(default_api.str_replace_editor(command="view", path="/workspace/solution.py", '
        "view_range=[1, 30]))\n```",
        [C("str_replace_editor", {**VIEW, "view_range": [1, 30]}, "tool_code")],
    ),
    case(
        "gemma-triple-quoted-code-with-parens",
        '<tool_code>\nstr_replace_editor(command="create", path="/workspace/fix.py", '
        'file_text="""def add(a, b):\n'
        '    # (sum) of "a" and \'b\')\n    return a + b\n""")\n</tool_code>',
        [
            C(
                "str_replace_editor",
                {
                    "command": "create",
                    "path": "/workspace/fix.py",
                    "file_text": "def add(a, b):\n    # (sum) of \"a\" and 'b')\n    return a + b\n",
                },
                "tool_code",
            )
        ],
    ),
    case(
        "gemma-literals-and-submit",
        "<tool_code>bash(command='echo \\'(done)\\'', timeout=30, env={\"CI\": True, \"DEBUG\": None})\n"
        "submit()</tool_code>",
        [
            C(
                "bash",
                {"command": "echo '(done)'", "timeout": 30, "env": {"CI": True, "DEBUG": None}},
                "tool_code",
            ),
            C("submit", {}, "tool_code"),
        ],
    ),
    # --- gpt-oss harmony --------------------------------------------------------------------------------
    case(
        "gpt-oss-analysis-then-call",
        "<|channel|>analysis<|message|>We need to inspect the repo. Use bash ls.<|end|><|start|>assistant"
        "<|channel|>commentary to=functions.bash <|constrain|>json<|message|>"
        '{"command":"ls -R /workspace"}<|call|>',
        [C("bash", {"command": "ls -R /workspace"}, "harmony")],
    ),
    case(
        "gpt-oss-recipient-before-channel",
        "<|channel|>analysis<|message|>Let me view the file. Maybe <tool_call> syntax? No.<|end|>"
        "<|start|>assistant to=functions.str_replace_editor<|channel|>commentary json<|message|>"
        '{"command": "view", "path": "/workspace/solution.py"}<|call|>',
        [C("str_replace_editor", VIEW, "harmony")],
    ),
    case(
        "gpt-oss-call-token-stripped",
        "<|channel|>commentary to=functions.bash <|constrain|>json<|message|>"
        '{"command":"python -m pytest -q"}',
        [C("bash", PYTEST, "harmony")],
    ),
    case(
        "gpt-oss-submit",
        "<|channel|>analysis<|message|>All tests pass. Submit.<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.submit <|constrain|>json<|message|>{}<|call|>",
        [C("submit", {}, "harmony")],
    ),
    # --- DeepSeek ---------------------------------------------------------------------------------------
    case(
        "deepseek-v3.1",
        "Let me run the failing test first.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>bash<｜tool▁sep｜>"
        '{"command": "python -m pytest tests/test_core.py::test_parse -x"}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        "<｜end▁of▁sentence｜>",
        [C("bash", {"command": "python -m pytest tests/test_core.py::test_parse -x"}, "deepseek")],
    ),
    case(
        "deepseek-v3.1-thinking-two-calls",
        "The user wants the bug fixed; view the file, then run the tests.</think><｜tool▁calls▁begin｜>"
        '<｜tool▁call▁begin｜>str_replace_editor<｜tool▁sep｜>{"command": "view", "path": '
        '"/workspace/solution.py"}'
        '<｜tool▁call▁end｜><｜tool▁call▁begin｜>bash<｜tool▁sep｜>{"command": "python -m pytest -q"}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        [C("str_replace_editor", VIEW, "deepseek"), C("bash", PYTEST, "deepseek")],
    ),
    case(
        "deepseek-v3-function-fenced-json",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>str_replace_editor\n```json\n"
        '{"command": "view", "path": "/workspace/solution.py"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        [C("str_replace_editor", VIEW, "deepseek")],
    ),
    # --- Kimi K2 ----------------------------------------------------------------------------------------
    case(
        "kimi-k2-two-calls-with-ids",
        "I'll inspect the file and run the tests.<|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.str_replace_editor:0<|tool_call_argument_begin|>{"command": "view", "path": '
        '"/workspace/solution.py"}'
        '<|tool_call_end|><|tool_call_begin|>functions.bash:1<|tool_call_argument_begin|>{"command": '
        '"python -m pytest -q"}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        [
            C("str_replace_editor", VIEW, "kimi", "functions.str_replace_editor:0"),
            C("bash", PYTEST, "kimi", "functions.bash:1"),
        ],
    ),
    case(
        "kimi-k2-submit",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.submit:3<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>",
        [C("submit", {}, "kimi", "functions.submit:3")],
    ),
    # --- Fenced JSON fallback ---------------------------------------------------------------------------
    case(
        "fenced-json-call",
        'I\'ll run the tests to see the failure.\n```json\n{"name": "bash", "arguments": {"command": '
        '"python -m pytest -q"}}\n```',
        [C("bash", PYTEST, "fenced_json")],
    ),
    case(
        "plain-fence-list-of-calls",
        '```\n[{"name": "bash", "arguments": {"command": "ls"}}, {"name": "submit", "arguments": {}}]\n```',
        [C("bash", {"command": "ls"}, "fenced_json"), C("submit", {}, "fenced_json")],
    ),
    # --- Several syntaxes in one message keep their order -----------------------------------------------
    case(
        "mixed-syntaxes-keep-order",
        '<tool_code>bash(command="echo first")</tool_code>\n'
        '<tool_call>{"name": "bash", "arguments": {"command": "echo second"}}</tool_call>\n'
        "<function=submit>\n</function>",
        [
            C("bash", {"command": "echo first"}, "tool_code"),
            C("bash", {"command": "echo second"}, "hermes"),
            C("submit", {}, "qwen3_coder"),
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), FORMAT_CASES)
def test_model_outputs_parse_to_exact_calls(text: str, expected: list[ToolCall]) -> None:
    result = parse_tool_calls(text, known_tools=TOOLS)
    assert result.errors == ()
    assert list(result.calls) == expected


@pytest.mark.parametrize(("text", "expected"), FORMAT_CASES)
def test_known_tools_none_accepts_the_same_calls(text: str, expected: list[ToolCall]) -> None:
    assert list(parse_tool_calls(text).calls) == expected


# ---------------------------------------------------------------------------------------------------------
# Malformed calls: no exception, no call, a message naming the concrete problem and a correct example
# ---------------------------------------------------------------------------------------------------------

HERMES_EXAMPLE = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
LS_CALL = '{"name": "bash", "arguments": {"command": "ls"}}'
DS_BEGIN = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>"
DS_END = "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
KIMI_BEGIN = "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0"
KIMI_END = "<|tool_call_end|><|tool_calls_section_end|>"

# (id, text, names of the good calls, substrings the error messages must contain)
ERROR_CASES = [
    case(
        "truncated-json-unclosed-tag",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la',
        [],
        ["not closed with </tool_call>", "JSON is incomplete", "stops before it is complete", HERMES_EXAMPLE],
    ),
    case(
        "missing-closing-brace",
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}\n</tool_call>',
        [],
        ["Could not parse the JSON inside <tool_call>", "stops before it is complete"],
    ),
    case(
        "trailing-comma",
        '<tool_call>{"name": "bash", "arguments": {"command": "ls",}}</tool_call>',
        [],
        ["trailing comma"],
    ),
    case(
        "single-quotes",
        "<tool_call>{'name': 'bash', 'arguments': {'command': 'ls'}}</tool_call>",
        [],
        ["double quotes"],
    ),
    case(
        "python-literals-in-json",
        '<tool_call>{"name": "bash", "arguments": {"command": "ls", "background": True}}</tool_call>',
        [],
        ["true, false and null"],
    ),
    case(
        "raw-newline-in-json-string",
        '<tool_call>{"name": "bash", "arguments": {"command": "cat <<EOF\nhi\nEOF"}}</tool_call>',
        [],
        ["Invalid control character", "\\n"],
    ),
    case("missing-name", '<tool_call>{"arguments": {"command": "ls"}}</tool_call>', [], ['no "name" key']),
    case(
        "name-not-a-string",
        '<tool_call>{"name": 42, "arguments": {}}</tool_call>',
        [],
        ['"name" must be a non-empty string'],
    ),
    case(
        "arguments-not-an-object",
        '<tool_call>{"name": "bash", "arguments": ["ls", "-la"]}</tool_call>',
        [],
        ["must be a JSON object", "not a list"],
    ),
    case(
        "arguments-string-not-json",
        '<tool_call>{"name": "bash", "arguments": "ls -la"}</tool_call>',
        [],
        ["string that is not valid JSON"],
    ),
    case("empty-tool-call", "<tool_call>\n</tool_call>", [], ["empty"]),
    case("extra-closing-brace", f"<tool_call>{LS_CALL}}}</tool_call>", [], ["Unexpected text '}'"]),
    case("json-not-an-object", '<tool_call>\n"bash ls"\n</tool_call>', [], ["got a string"]),
    case(
        "qwen3-coder-unclosed-parameter",
        "<tool_call>\n<function=bash>\n<parameter=command>\nls -la /workspace",
        [],
        ["parameter 'command'", "not closed with </parameter>", "<function=bash>\n<parameter=command>"],
    ),
    case(
        "qwen3-coder-value-without-parameter-tag",
        "<tool_call>\n<function=bash>\nls -la\n</function>\n</tool_call>",
        [],
        ["<parameter=NAME>"],
    ),
    case(
        "qwen3-coder-empty-function-name",
        "<tool_call>\n<function=>\n</function>\n</tool_call>",
        [],
        ["must hold the tool name"],
    ),
    case(
        "unknown-tool-did-you-mean",
        '<tool_call>{"name": "bassh", "arguments": {"command": "ls"}}</tool_call>',
        [],
        [
            "Unknown tool 'bassh'",
            "Available tools: bash, str_replace_editor, submit.",
            "Did you mean 'bash'?",
        ],
    ),
    case(
        "unknown-tool-no-suggestion",
        '<tool_call>{"name": "web_search", "arguments": {"query": "x"}}</tool_call>',
        [],
        ["Unknown tool 'web_search'", "Available tools: bash, str_replace_editor, submit."],
    ),
    case(
        "unknown-tool-case",
        '[TOOL_CALLS]Bash[ARGS]{"command": "ls"}',
        [],
        ["Unknown tool 'Bash'", "Did you mean 'bash'?"],
    ),
    case(
        "tool-code-positional",
        '<tool_code>bash("ls -la")</tool_code>',
        [],
        ["positional argument", "keyword arguments", '<tool_code>bash(command="ls")</tool_code>'],
    ),
    case(
        "tool-code-variable",
        "<tool_code>bash(command=cmd)</tool_code>",
        [],
        ["argument 'command'", "not a literal"],
    ),
    case("tool-code-f-string", '<tool_code>bash(command=f"ls {path}")</tool_code>', [], ["not a literal"]),
    case("tool-code-expression", '<tool_code>bash(command="ls " + path)</tool_code>', [], ["not a literal"]),
    case("tool-code-double-star", "<tool_code>bash(**{'command': 'ls'})</tool_code>", [], ["**kwargs"]),
    case(
        "tool-code-unclosed-paren",
        '<tool_code>bash(command="ls -la"</tool_code>',
        [],
        ["never closed with ')'"],
    ),
    case("tool-code-not-a-call", "<tool_code>ls -la</tool_code>", [], ["Expected a function call"]),
    case(
        "python-tag-positional",
        '<|python_tag|>bash.call("ls")',
        [],
        ["positional argument", "<|python_tag|>bash.call("],
    ),
    case(
        "mistral-broken-list",
        '[TOOL_CALLS] [{"name": "bash", "arguments": {"command": "ls"}]',
        [],
        ["Could not parse the JSON list after [TOOL_CALLS]", "[TOOL_CALLS]["],
    ),
    case(
        "mistral-arguments-not-json",
        '[TOOL_CALLS] [{"name": "bash", "arguments": "ls"}]',
        [],
        ["string that is not valid JSON"],
    ),
    case(
        "devstral-missing-args-tag",
        '[TOOL_CALLS]bash{"command": "ls"}',
        [],
        ["[ARGS]", '[TOOL_CALLS]bash[ARGS]{"command": "ls"}'],
    ),
    case(
        "devstral-bad-json",
        '[TOOL_CALLS]bash[ARGS]{"command": ls}',
        [],
        ["Could not parse the [ARGS] of the call to 'bash'"],
    ),
    case(
        "gpt-oss-bad-json",
        '<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{"command": ls}<|call|>',
        [],
        ["functions.bash", "to=functions.bash <|constrain|>json<|message|>"],
    ),
    case(
        "gpt-oss-cut-in-header",
        "<|channel|>analysis<|message|>Run ls.<|end|><|start|>assistant<|channel|>commentary "
        "to=functions.bash",
        [],
        ["cut off before <|message|>"],
    ),
    case("deepseek-missing-sep", f'{DS_BEGIN}bash{{"command": "ls"}}{DS_END}', [], ["<｜tool▁sep｜>"]),
    case(
        "deepseek-truncated-json",
        f'{DS_BEGIN}bash<｜tool▁sep｜>{{"command": "ls"{DS_END}',
        [],
        ["call to 'bash'", "<｜tool▁call▁begin｜>bash<｜tool▁sep｜>"],
    ),
    case(
        "kimi-single-quotes",
        f"{KIMI_BEGIN}<|tool_call_argument_begin|>{{\"command\": 'ls'}}{KIMI_END}",
        [],
        ["call to 'bash'", "double quotes", "<|tool_call_begin|>functions.bash:0"],
    ),
    case(
        "kimi-missing-argument-token",
        f'{KIMI_BEGIN}{{"command": "ls"}}{KIMI_END}',
        [],
        ["<|tool_call_argument_begin|>"],
    ),
    case(
        "fenced-json-broken-call",
        'Running the tests.\n```json\n{"name": "bash", "arguments": {"command": "pytest"}\n```',
        [],
        ["``` block", '```json\n{"name": "bash"'],
    ),
    case(
        "llama-json-truncated",
        '{"name": "bash", "parameters": {"command": "pytest -q"}',
        [],
        ["Could not parse the JSON tool call", '{"name": "bash", "arguments": {"command": "ls"}}'],
    ),
    case(
        "llama-parameters-not-object",
        '{"name": "bash", "parameters": "pytest -q"}',
        [],
        ["string that is not valid JSON"],
    ),
    case(
        "call-only-inside-think",
        f"<think>\nI will call <tool_call>\n{LS_CALL}\n</tool_call>\n</think>\n\nLet me check.",
        [],
        ["inside the <think>", "</think>"],
    ),
    case(
        "unclosed-think",
        f"<think>\nThe bug is in the loop. I should run <tool_call>\n{LS_CALL}\n</tool_call>",
        [],
        ["reasoning block was not closed"],
    ),
    case(
        "good-and-bad-call",
        f'<tool_call>\n{LS_CALL}\n</tool_call>\n<tool_call>\n{{"name": "bash", "arguments": {{"command": '
        f'"x",}}}}\n</tool_call>',
        ["bash"],
        ["trailing comma"],
    ),
    case(
        "unknown-and-good-call",
        '<tool_call>\n{"name": "grep", "arguments": {"pattern": "x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>',
        ["submit"],
        ["Unknown tool 'grep'"],
    ),
]


@pytest.mark.parametrize(("text", "good_names", "needles"), ERROR_CASES)
def test_malformed_calls_become_actionable_errors(
    text: str, good_names: list[str], needles: list[str]
) -> None:
    result = parse_tool_calls(text, known_tools=TOOLS)
    assert [call.name for call in result.calls] == good_names
    assert result.errors, "a malformed call must produce a ParseError"
    messages = "\n".join(error.message for error in result.errors)
    for needle in needles:
        assert needle in messages
    for error in result.errors:
        assert isinstance(error, ParseError) and len(error.snippet) <= 200


def test_error_message_matches_the_documented_shape() -> None:
    text = '<tool_call>{"name": "bash", "arguments": {"command" "ls"}}</tool_call>'
    (error,) = parse_tool_calls(text).errors
    assert error.message == (
        "Could not parse the JSON inside <tool_call>...</tool_call>: Expecting ':' delimiter (line 1, "
        "column 42)."
        ' Write each call as <tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>.'
    )
    assert error.snippet == '{"name": "bash", "arguments": {"command" "ls"}}</tool_call>'


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("The bug is an off-by-one in `range(len(xs) - 1)`; use `range(len(xs))`.", id="prose"),
        pytest.param(
            'The config should be:\n{"debug": true, "level": 3}\nThen restart.', id="json-data-object"
        ),
        pytest.param('{"name": "Alice", "age": 30}', id="json-with-name-but-not-a-call"),
        pytest.param('{"type": "object", "properties": {"command": {"type": "string"}}}', id="json-schema"),
        pytest.param("```python\ndef f(x):\n    return {'name': x}\n```", id="python-fence"),
        pytest.param('```json\n{"name": "my-package", "version": "1.0.0"}\n```', id="package-json-fence"),
        pytest.param("```json\n[]\n```", id="empty-json-list-fence"),
        pytest.param("Use a dict like {name: value} and call f(x).", id="braces-in-prose"),
        pytest.param("", id="empty"),
        pytest.param("   \n\t ", id="whitespace"),
        pytest.param("<think>\nJust thinking.\n</think>\n\nThe tests pass.", id="think-then-answer"),
    ],
)
def test_plain_text_is_neither_call_nor_error(text: str) -> None:
    result = parse_tool_calls(text, known_tools=TOOLS)
    assert result.calls == () and result.errors == ()


# ---------------------------------------------------------------------------------------------------------
# content, known_tools, non-str input, limits
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content"),
    [
        case(
            "qwen3",
            f"<think>\nLook first.\n</think>\n\nI'll list.\n<tool_call>\n{LS_CALL}\n</tool_call><|im_end|>",
            "I'll list.",
        ),
        case(
            "gpt-oss-final",
            "<|channel|>analysis<|message|>Done.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>All pass.<|return|>",
            "All pass.",
        ),
        case(
            "kimi",
            f'Checking.{KIMI_BEGIN}<|tool_call_argument_begin|>{{"command": "ls"}}{KIMI_END}',
            "Checking.",
        ),
        case("devstral", 'First.\n[TOOL_CALLS]bash[ARGS]{"command": "ls"}', "First."),
        case(
            "tool-code-prose-around",
            'Before.\n<tool_code>bash(command="ls")</tool_code>\nAfter.',
            "Before.\n\nAfter.",
        ),
    ],
)
def test_content_drops_reasoning_and_markup(text: str, content: str) -> None:
    assert parse_tool_calls(text).content == content


def test_gpt_oss_final_message_has_no_call() -> None:
    text = (
        "<|channel|>analysis<|message|>Done.<|end|><|start|>assistant<|channel|>final<|message|>Ok.<|return|>"
    )
    result = parse_tool_calls(text, TOOLS)
    assert result.calls == () and result.errors == ()


def test_known_tools_accepts_any_iterable_once() -> None:
    text = '<tool_call>{"name": "bash", "arguments": {}}</tool_call>'
    text += '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
    result = parse_tool_calls(text, known_tools=(name for name in ["submit", "bash"]))
    assert [call.name for call in result.calls] == ["bash", "submit"]
    (error,) = parse_tool_calls(text, known_tools="submit").errors
    assert error.message == "Unknown tool 'bash'. Available tools: submit."


def test_unknown_dotted_name_suggests_the_tool() -> None:
    (error,) = parse_tool_calls(
        '<tool_call>{"name": "functions.bash", "arguments": {}}</tool_call>', TOOLS
    ).errors
    assert "Did you mean 'bash'?" in error.message


@pytest.mark.parametrize(
    "value",
    [None, b"<tool_call>{}</tool_call>", 42, ["<tool_call>"], object()],
    ids=["none", "bytes", "int", "list", "object"],
)
def test_non_str_input_is_an_error_not_an_exception(value: Any) -> None:
    result = parse_tool_calls(value)
    assert result.calls == ()
    assert "Expected the model output as text (str)" in result.errors[0].message


def test_an_oversized_message_runs_nothing_and_says_why() -> None:
    """Cut at the cap, a call across it would read as "not closed": the model hears the real problem."""
    big = "<tool_call>" + json.dumps({"name": "bash", "arguments": {"command": "echo " + "x" * 5_000_000}})
    result = parse_tool_calls(big + "</tool_call>")
    assert result.calls == ()
    assert len(result.errors) == 1
    message = result.errors[0].message
    assert "more than the 1000000 a turn may have" in message and "not closed" not in message


PATHOLOGICAL = {
    "unclosed-tool-calls": "<tool_call>{" * 20_000,
    "unclosed-functions": "<function=a><parameter=b>" * 10_000,
    "parameter-closers": "<function=a><parameter=x>" + "</parameter>q" * 20_000,
    "deep-json": "<tool_call>" + "[" * 200_000,
    "deep-json-bare": '{"name": [\n' * 20_000,
    "failing-json-lines": '{"name": "x", "arguments": {\n' * 8_000,
    "deep-python": "<tool_code>bash(command=" + "(" * 50_000 + ")" * 50_000 + ")</tool_code>",
    "deep-python-list": "<tool_code>bash(command=" + "[" * 150 + "]" * 150 + ")</tool_code>",
    "unterminated-python-string": '<tool_code>bash(command="""' + 'a"' * 100_000,
    "harmony-messages": "<|message|><|channel|>" * 10_000,
    "mistral-tags": "[TOOL_CALLS]a[ARGS]{" * 10_000,
    "think-tags": "<think></think></think><think>" * 10_000,
    "fences": '```json\n{"name": "a"\n' * 10_000,
    "brackets-and-quotes": "([{'\"`" * 40_000,
    "many-valid-calls": '<tool_call>{"name": "bash", "arguments": {}}</tool_call>' * 4_000,
}


@pytest.mark.timeout(
    120
)  # a guard, not a speed goal: linear work takes well under a second, quadratic minutes
@pytest.mark.parametrize("text", list(PATHOLOGICAL.values()), ids=list(PATHOLOGICAL))
def test_pathological_input_never_raises(text: str) -> None:
    result = parse_tool_calls(text, known_tools=TOOLS)
    assert isinstance(result, ParsedCalls)


def test_many_valid_calls_are_all_returned() -> None:
    result = parse_tool_calls(PATHOLOGICAL["many-valid-calls"], TOOLS)
    assert len(result.calls) == 4_000 and result.errors == ()


# ---------------------------------------------------------------------------------------------------------
# calls_from_message: OpenAI-format assistant messages
# ---------------------------------------------------------------------------------------------------------


def openai_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    "unit",
    [
        "<tool_call>{",
        "[TOOL_CALLS]",
        "<tool_code>bash(",
        '<tool_call>{"name": "x' + "y" * 3000 + '"}</tool_call>',
    ],
    ids=["unclosed hermes", "mistral without a list", "unclosed tool_code", "long unknown names"],
)
def test_the_errors_of_a_flood_of_broken_calls_are_bounded(unit: str) -> None:
    """One error per broken call, each quoting what the model wrote, made a megabyte of them tens of
    megabytes of feedback: at most MAX_ERRORS come back, the last saying how many more there were."""
    from gym_swe.tools.parsing import MAX_ERROR_CHARS, MAX_ERRORS

    result = parse_tool_calls(unit * (999_000 // len(unit)), known_tools=["bash", "submit"])
    assert len(result.errors) == MAX_ERRORS + 1
    assert all(len(error.message) <= MAX_ERROR_CHARS for error in result.errors)
    assert "could not be read either" in result.errors[-1].message


def test_error_messages_are_valid_text_of_bounded_length() -> None:
    name = "\ud800" + "n" * 5000
    message = {"tool_calls": [{"function": {"name": name, "arguments": "{oops"}}]}
    (error,) = calls_from_message(message, known_tools=["bash"]).errors
    assert len(error.message) <= 1000 and "not valid JSON" in error.message
    error.message.encode("utf-8")  # the lone surrogate is written as its escape


def test_message_tool_calls_with_string_and_dict_arguments() -> None:
    message = {
        "role": "assistant",
        "content": "<think>plan</think>Let me look.",
        "tool_calls": [
            openai_call("call_0", "bash", '{"command": "ls -la"}'),
            openai_call("call_1", "str_replace_editor", {"command": "view", "path": "/a.py"}),
            openai_call("call_2", "submit", ""),
        ],
    }
    result = calls_from_message(message, TOOLS)
    assert result.calls == (
        C("bash", {"command": "ls -la"}, "openai", "call_0"),
        C("str_replace_editor", {"command": "view", "path": "/a.py"}, "openai", "call_1"),
        C("submit", {}, "openai", "call_2"),
    )
    assert result.errors == () and result.content == "Let me look."


def test_message_bad_json_arguments_name_the_tool_and_keep_good_calls() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [openai_call("a", "bash", '{"command": "ls"'), openai_call("b", "submit", "{}")],
    }
    result = calls_from_message(message, TOOLS)
    assert result.calls == (C("submit", {}, "openai", "b"),)
    (error,) = result.errors
    assert "The arguments of the 'bash' tool call are not valid JSON" in error.message
    assert '"function": {"name": "bash"' in error.message  # the example shows the OpenAI shape


@pytest.mark.parametrize(
    ("message", "needle"),
    [
        case(
            "entry-not-object",
            {"role": "assistant", "tool_calls": ["bash"]},
            "tool_calls[0] must be an object",
        ),
        case(
            "no-function",
            {"role": "assistant", "tool_calls": [{"id": "x", "type": "function"}]},
            'no "function" object',
        ),
        case("empty-name", {"tool_calls": [openai_call("x", "", "{}")]}, "must be a non-empty string"),
        case("arguments-list", {"tool_calls": [openai_call("x", "bash", "[1]")]}, "not a list"),
        case("unknown-tool", {"tool_calls": [openai_call("x", "rm", "{}")]}, "Unknown tool 'rm'"),
        case(
            "tool-calls-not-list",
            {"role": "assistant", "tool_calls": {"name": "bash"}},
            "tool_calls must be a list",
        ),
        case("message-not-mapping", ["not", "a", "dict"], "Expected an assistant message dict"),
    ],
)
def test_message_errors(message: Any, needle: str) -> None:
    result = calls_from_message(message, TOOLS)
    assert result.calls == ()
    assert needle in result.errors[0].message


@pytest.mark.parametrize("tool_calls", [None, []], ids=["none", "empty-list"])
def test_message_without_tool_calls_falls_back_to_content(tool_calls: Any) -> None:
    message = {
        "role": "assistant",
        "content": f"<tool_call>\n{LS_CALL}\n</tool_call>",
        "tool_calls": tool_calls,
    }
    assert calls_from_message(message).calls == (C("bash", {"command": "ls"}, "hermes"),)


def test_message_content_parts_and_no_content() -> None:
    parts = {"role": "assistant", "content": [{"type": "text", "text": "<tool_code>submit()</tool_code>"}]}
    assert calls_from_message(parts).calls == (C("submit", {}, "tool_code"),)
    empty = calls_from_message({"role": "assistant", "content": None})
    assert empty.calls == () and empty.errors == () and empty.content == ""


# ---------------------------------------------------------------------------------------------------------
# Round trip through the real chat templates (skipped without ../shared or jinja2)
# ---------------------------------------------------------------------------------------------------------

ARGS_JSON = {"command": "python -c \"print('héllo <b>\\\\n')\"\n  && ls", "timeout": 30}
ARGS_TEXT = {"command": "cd /testbed && python -c \"print('héllo <b>')\"", "path": "/testbed/a b.py"}
# (template under shared/data, arguments, as a JSON string?, calls rendered, format, ids, content "" or None)
TEMPLATE_CASES = [
    case(
        "qwen2.5",
        "tokenizers/qwen2.5-instruct/tokenizer_config.json",
        ARGS_JSON,
        False,
        2,
        "hermes",
        None,
        None,
    ),
    case("qwen3", "chat_templates/Qwen-Qwen3-0.6B.jinja", ARGS_JSON, False, 2, "hermes", None, ""),
    case(
        "hermes3",
        "chat_templates/NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
        ARGS_JSON,
        True,
        2,
        "hermes",
        None,
        None,
    ),
    case(
        "qwen3-coder",
        "tokenizers/qwen3-coder/tokenizer_config.json",
        ARGS_TEXT,
        False,
        2,
        "qwen3_coder",
        None,
        None,
    ),
    case(
        "llama3.1",
        "chat_templates/meta-llama-Llama-3.1-8B-Instruct.jinja",
        ARGS_JSON,
        False,
        1,
        "llama3_json",
        None,
        None,
    ),
    case(
        "llama3.3",
        "chat_templates/meta-llama-Llama-3.3-70B-Instruct.jinja",
        ARGS_JSON,
        False,
        1,
        "llama3_json",
        None,
        None,
    ),
    case(
        "mistral-v0.3",
        "tokenizers/mistral-7b-instruct-v0.3/tokenizer_config.json",
        ARGS_JSON,
        True,
        2,
        "mistral",
        "id",
        None,
    ),
    case(
        "mistral-nemo",
        "chat_templates/mistralai-Mistral-Nemo-Instruct-2407.jinja",
        ARGS_JSON,
        False,
        2,
        "mistral",
        "id",
        None,
    ),
    case(
        "mistral-small-3.2",
        "chat_templates/Mistral-Small-3.2-24B-Instruct-2506.jinja",
        ARGS_JSON,
        False,
        2,
        "mistral",
        "id",
        None,
    ),
    case(
        "devstral",
        "chat_templates/unsloth-mistral-Devstral-Small-2507.jinja",
        ARGS_JSON,
        False,
        2,
        "mistral",
        None,
        "",
    ),
    case(
        "deepseek-v3.1",
        "chat_templates/deepseek-ai-DeepSeek-V3.1.jinja",
        ARGS_JSON,
        True,
        2,
        "deepseek",
        None,
        None,
    ),
    case("kimi-k2", "chat_templates/moonshotai-Kimi-K2.jinja", ARGS_JSON, False, 2, "kimi", "kimi", None),
    case(
        "kimi-k2-string-arguments",
        "chat_templates/moonshotai-Kimi-K2.jinja",
        ARGS_JSON,
        True,
        2,
        "kimi",
        "kimi",
        None,
    ),
    case("gpt-oss", "tokenizers/gpt-oss/chat_template.jinja", ARGS_JSON, False, 1, "harmony", None, ""),
    case(
        "gpt-oss-string-arguments",
        "tokenizers/gpt-oss/chat_template.jinja",
        ARGS_JSON,
        True,
        1,
        "harmony",
        None,
        "",
    ),
]


def _template_env() -> Any:
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )

    def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, **kwargs: Any) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, **kwargs)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    env.filters["tojson"] = tojson  # what transformers installs
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "26 Jul 2024"
    return env


@pytest.mark.parametrize(
    ("source", "arguments", "as_string", "n_calls", "fmt", "ids", "content"), TEMPLATE_CASES
)
def test_rendered_assistant_turn_parses_back(
    source: str,
    arguments: dict[str, Any],
    as_string: bool,
    n_calls: int,
    fmt: str,
    ids: str | None,
    content: str | None,
) -> None:
    path = SHARED / "data" / source
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    env = _template_env()
    raw = path.read_text(encoding="utf-8")
    template = env.from_string(json.loads(raw)["chat_template"] if path.suffix == ".json" else raw)
    wanted = [("bash", arguments), ("submit", {})][:n_calls]
    encode = (lambda args: json.dumps(args, ensure_ascii=False)) if as_string else (lambda args: args)
    tool_calls = [openai_call(f"c{i}d4e5f6g", name, encode(args)) for i, (name, args) in enumerate(wanted)]
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the test."},
    ]
    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    kwargs = {
        "tools": [
            {
                "type": "function",
                "function": {"name": "bash", "description": "Run a command.", "parameters": schema},
            }
        ],
        "bos_token": "<s>",
        "eos_token": "</s>",
    }
    prompt = template.render(messages=messages, add_generation_prompt=True, **kwargs)
    assistant = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    full = template.render(messages=[*messages, assistant], add_generation_prompt=False, **kwargs)
    # What the model generated is what the full render adds to the generation prompt. Mistral-Nemo moves
    # its system prompt, so for it the turn is whatever follows the last [/INST].
    turn = full[len(prompt) :] if full.startswith(prompt) else full.rsplit("[/INST]", 1)[1]
    result = parse_tool_calls(turn, known_tools=TOOLS)
    assert result.errors == ()
    if fmt == "qwen3_coder":  # values stay raw text
        wanted = [(name, {k: str(v) for k, v in args.items()}) for name, args in wanted]
    assert [(c.name, c.arguments, c.format) for c in result.calls] == [
        (name, args, fmt) for name, args in wanted
    ]
    if ids == "id":
        assert [c.id for c in result.calls] == [call["id"] for call in tool_calls]
    elif ids == "kimi":
        assert [c.id for c in result.calls] == [f"functions.{name}:{i}" for i, (name, _) in enumerate(wanted)]
    assert result.content == ""


# ---------------------------------------------------------------------------------------------------------
# Property tests: nothing raises; well-formed calls in every syntax round-trip exactly
# ---------------------------------------------------------------------------------------------------------

FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<function=", "<function=bash>", "</function>", "<parameter=",
    "<parameter=command>", "</parameter>", "<think>", "</think>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]",
    "[CALL_ID]", "<tool_code>", "</tool_code>", "```tool_code\n", "```json\n", "```", "<|start|>",
    "<|channel|>", "analysis", "commentary", " to=functions.bash", "<|constrain|>json", "<|message|>",
    "<|end|>", "<|call|>", "<|return|>", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
    "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<|tool_calls_section_begin|>", "<|tool_call_begin|>",
    "functions.bash:0", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>",
    '{"name": "bash", "arguments": ', '{"command": "ls"}', "}", '{"name": "submit", "parameters": {}}',
    "bash(", "command=", '"ls"', "'''", '"""', ")", "submit()", "print(", "default_api.", "True", "None",
    "\\", "\n", ";", "<|eot_id|>", "<|im_end|>", "</s>",
]  # fmt: skip
grammar_text = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS), st.text(max_size=12), st.sampled_from(list("{}[]()\"'<>|=:;,\n\\` "))
    ),
    max_size=40,
).map("".join)


def _check_shape(result: Any) -> None:
    assert isinstance(result, ParsedCalls)
    assert (
        isinstance(result.calls, tuple)
        and isinstance(result.errors, tuple)
        and isinstance(result.content, str)
    )
    for call in result.calls:
        assert isinstance(call, ToolCall) and isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, dict)
    for error in result.errors:
        assert isinstance(error, ParseError) and isinstance(error.message, str) and error.message
        assert len(error.snippet) <= 200


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_random_text_never_raises(text: str) -> None:
    _check_shape(parse_tool_calls(text))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammar_text, st.one_of(st.none(), st.lists(st.sampled_from([*TOOLS, "x"]))))
def test_markup_soup_never_raises(text: str, known: list[str] | None) -> None:
    result = parse_tool_calls(text, known_tools=known)
    _check_shape(result)
    if known is not None:
        assert all(call.name in known for call in result.calls)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
messages = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": st.none() | grammar_text,
            "tool_calls": st.lists(json_values, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": json_values,
                        "function": st.fixed_dictionaries(
                            {"name": json_values, "arguments": json_values | grammar_text}
                        ),
                    }
                ),
                max_size=3,
            )
        }
    ),
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_random_messages_never_raise(message: Any) -> None:
    _check_shape(calls_from_message(message))


# Text that no syntax can carry inside an argument: think tags are stripped first, and the special tokens
# and closing tags end the call.
RESERVED = ["<think>", "</think>", "<|", "<｜", "[TOOL_CALLS]", "<tool_code>", "<parameter=", "</parameter>"]
RESERVED += ["<function=", "</function>", "<tool_call>", "</tool_call>"]
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and s not in ("print", "call")
)
safe_text = st.text().filter(lambda s: not any(r in s for r in RESERVED))


def _render(fmt: str, name: str, args: dict[str, str]) -> str:
    payload = json.dumps(args, ensure_ascii=False)
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args.items())
    rendered = {
        "hermes": f'<tool_call>\n{{"name": "{name}", "arguments": {payload}}}\n</tool_call>',
        "qwen3_coder": f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>",
        "mistral": f"[TOOL_CALLS]{name}[ARGS]{payload}",
        "kimi": "<|tool_calls_section_begin|>"
        f"<|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>"
        f"{payload}<|tool_call_end|><|tool_calls_section_end|>",
        "deepseek": f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{payload}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "harmony": f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{payload}<|call|>",
        "tool_code": f"<tool_code>{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})</tool_code>",
    }
    return rendered[fmt]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["hermes", "qwen3_coder", "mistral", "kimi", "deepseek", "harmony", "tool_code"]),
    identifiers,
    st.dictionaries(identifiers, safe_text, max_size=4),
    safe_text,
)
def test_well_formed_calls_round_trip(fmt: str, name: str, args: dict[str, str], prose: str) -> None:
    result = parse_tool_calls(prose.replace("`", "") + "\n" + _render(fmt, name, args))
    assert result.errors == ()
    assert [(c.name, c.arguments, c.format) for c in result.calls] == [(name, args, fmt)]
