"""How Codex, Claude Code and Gemini CLI runs are read when they end: their exits as the runner hands them over,
with the output each CLI printed when the proxy refused its request (as these CLIs print it: Claude Code's
one-line JSON result, Gemini CLI's stack trace then its pretty-printed JSON error), and the launch each is
given (only its own documented settings, every path inside the sandbox)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import HarnessEnd, HarnessExit, HarnessRun, last_json_object
from gym_swe.integrations.harnesses.claude_code import CLAUDE_CODE, ClaudeCodeHarness
from gym_swe.integrations.harnesses.codex import CODEX, CodexHarness
from gym_swe.integrations.harnesses.gemini_cli import GEMINI_CLI, GeminiCliHarness

REFUSED = "this rollout's turn budget (max_turns=2) is spent: it has ended"
CLAUDE_RESULT = json.dumps(
    {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 403,
     "result": f"API Error: 403 {REFUSED}", "num_turns": 3}
)  # fmt: skip
GEMINI_ERROR = json.dumps(
    {"session_id": "s", "error": {"type": "Error", "message": json.dumps({"error": {"message": REFUSED}}),
                                  "code": 403}},
    indent=2,
)  # fmt: skip
RUN = HarnessRun(
    base_url="http://127.0.0.1:8765/rollout/r1/v1",
    api_key="secret-1",
    model="Qwen/Qwen2.5-7B-Instruct",
    prompt="Fix it.",
    workdir="/workspace",
    home="/tmp/gym_swe-harness/home",
    install_dir="/opt/gym-swe/harnesses/h",
    node="/opt/gym-swe/harnesses/node/bin/node",
    max_turns=30,
    context_window=32768,
    max_output_tokens=4096,
)


def test_the_last_json_object_a_cli_printed() -> None:
    assert last_json_object(f"warning: x\n{CLAUDE_RESULT}\n[claude-code:note] {{not json}}\n") == json.loads(
        CLAUDE_RESULT
    )
    trace = "Error when talking to Gemini API\n    at Turn.run (chunk.js:1) {\n  status: 403\n}\n"
    assert last_json_object(trace + GEMINI_ERROR + "\n")["error"]["code"] == 403
    assert last_json_object("no json here\n{ broken") == {}


@pytest.mark.parametrize(
    ("harness", "output", "said"),
    [
        (CLAUDE_CODE, f"{CLAUDE_RESULT}\n", f"API Error: 403 {REFUSED}"),
        (GEMINI_CLI, f"_ApiError: ...\n    at throwErrorIfNotOK (chunk.js:2)\n{GEMINI_ERROR}\n", REFUSED),
    ],
    ids=["claude-code", "gemini-cli"],
)
def test_a_refused_request_is_a_failure_that_says_what_the_cli_was_told(
    harness, output: str, said: str
) -> None:  # type: ignore[no-untyped-def]
    end = harness.end(HarnessExit(exit_code=1, timed_out=False, output=output))
    assert (end.submitted, end.reason) == (False, "harness_failed")
    assert end.error is not None and said in end.error and "throwErrorIfNotOK" not in end.error
    assert len(end.error) < 400  # the CLI's words, not its whole output


@pytest.mark.parametrize("harness", [CODEX, CLAUDE_CODE, GEMINI_CLI], ids=lambda h: h.name)
def test_exit_zero_is_a_submission_and_a_timeout_a_truncation(harness) -> None:  # type: ignore[no-untyped-def]
    assert harness.end(HarnessExit(0, False, "done")) == HarnessEnd(True)
    assert harness.end(HarnessExit(-9, True, CLAUDE_RESULT)) == HarnessEnd(False, "harness_timeout")
    assert harness.end(HarnessExit(-2, False, "", interrupted=True)) == HarnessEnd(False, "harness_stopped")


def test_each_launch_is_the_clis_own_settings_pointed_at_the_proxy() -> None:
    codex = CodexHarness(auto_compact_token_limit=2000).launch(RUN)
    config = codex.files[f"{RUN.home}/.codex/config.toml"]
    assert 'base_url = "http://127.0.0.1:8765/rollout/r1/v1"' in config and 'wire_api = "responses"' in config
    assert 'model = "Qwen/Qwen2.5-7B-Instruct"' in config and "model_context_window = 32768" in config
    assert "model_auto_compact_token_limit = 2000" in config
    assert "model_auto_compact_token_limit" not in CODEX.launch(RUN).files[f"{RUN.home}/.codex/config.toml"]
    assert codex.env["GYM_SWE_API_KEY"] == "secret-1" and "secret-1" not in config  # read from its env_key
    assert codex.env["TMPDIR"].startswith(RUN.home)  # not under /tmp, where Codex puts no apply_patch
    assert codex.argv[:2] == (RUN.node, f"{RUN.install_dir}/node_modules/@openai/codex/bin/codex.js")
    claude = CLAUDE_CODE.launch(RUN)
    assert claude.argv[0] == f"{RUN.install_dir}/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
    assert (claude.env["ANTHROPIC_BASE_URL"], claude.env["ANTHROPIC_API_KEY"]) == (
        "http://127.0.0.1:8765/rollout/r1/v1",
        "secret-1",
    )
    assert claude.argv[claude.argv.index("--permission-mode") + 1] == "dontAsk"
    assert (claude.env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"], claude.env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"]) == (
        "100000",
        "26",  # 80% of the proxy's 32768 tokens, in the least window Claude Code takes
    )
    large = CLAUDE_CODE.launch(replace(RUN, context_window=200000)).env
    assert (
        large["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] == "200000"
        and "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE" not in large
    )
    gemini = GEMINI_CLI.launch(RUN)
    settings = json.loads(gemini.files[f"{RUN.home}/.gemini/settings.json"])
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert gemini.env["GOOGLE_GEMINI_BASE_URL"] == RUN.base_url and gemini.env["GEMINI_CLI_HOME"] == RUN.home
    for launch in (codex, claude, gemini):  # the task on stdin, never on the command line
        assert launch.stdin is not None and launch.files[launch.stdin] == RUN.prompt
        assert RUN.prompt not in launch.argv
        assert all(path.startswith(RUN.home) for path in launch.files)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: CodexHarness(auto_compact_token_limit=0), "auto_compact_token_limit must be a positive int"),
        (lambda: ClaudeCodeHarness(tools=()), "tools must name at least one of Claude Code's tools"),
        (lambda: GeminiCliHarness(tools=("",)), "tools must name at least one of Gemini CLI's tools"),
    ],
    ids=["codex", "claude-code", "gemini-cli"],
)
def test_an_option_that_would_do_nothing_is_an_error(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message):
        make()
