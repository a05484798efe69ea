"""Claude Code (npm ``@anthropic-ai/claude-code``), Anthropic's coding agent, as a harness: Anthropic
Messages.

Configured only through its documented settings (its CLI reference and environment variables), with its
config directory one gym_swe makes (``CLAUDE_CONFIG_DIR``):

- ``ANTHROPIC_BASE_URL`` the proxy, ``ANTHROPIC_API_KEY`` the rollout's secret (sent as ``x-api-key``),
  ``--model`` the proxy's model name, ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` the output budget the proxy allows;
  its compaction sized to the proxy's window (`compaction_settings`: it would take a model it does not know
  for a 1M-token one, and never compact before the proxy's limit);
- its tools are its own core ones (``--tools``): Bash, Read, Edit, Write, Glob, Grep; all of them allowed
  without asking (``--allowedTools``), and anything else refused without asking (``--permission-mode
  dontAsk``): nobody is there to answer, and this works as root (a container) where its bypass mode does not;
- nothing that needs a network or another model: no tool search (``ENABLE_TOOL_SEARCH=false``: its deferred
  tools would need it), no nonessential traffic (``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``: background
  requests such as session titles, which would be extra completions on the rollout), no telemetry, error
  reports or update checks.

It runs in print mode (``-p``: one task, the agent's loop until the model answers without a tool call, then
exit), with no session saved (``--no-session-persistence``), the task on stdin, its result as JSON on stdout
(``--output-format json``). The executable is the package's own ``claude`` (the native build its install
script put in place). Exit 0 is a final answer; a result that is an error (the proxy refusing a request: the
rollout's budget) is a failure whose error is the result's text, not the whole JSON.

Its commands inherit ``ANTHROPIC_API_KEY`` (the rollout's secret): the scrub it documents
(``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB``) makes it require a sandbox of its own (bubblewrap and socat, which a
jail does not nest), and its tools stop working. The agent's code could read the secret from the CLI's
process anyway; the rollout ends before grading, so nothing can generate while the grader runs.

What it sends and the proxy serves: a system message among the messages (its notes on the environment), a
``context_management`` edit that keeps thinking, thinking asked ``"display": "omitted"``, ``cache_control``
hints; a tool call's input comes back with the defaults it fills in (``"replace_all": false`` on Edit): a
history the model did not write, which the proxy records as a new segment (a fork). A compaction is two: its
summary request, then the history made of the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import (
    OUTPUT_TAIL_CHARS,
    HarnessEnd,
    HarnessExit,
    HarnessRun,
    Launch,
    NpmPackage,
    end_of_exit,
    last_json_object,
)

PACKAGE = NpmPackage("@anthropic-ai/claude-code", "2.1.332")
TOOLS = ("Bash", "Read", "Edit", "Write", "Glob", "Grep")
"""Claude Code's own tools for working on a codebase."""
MIN_COMPACT_WINDOW = 100_000
"""The least compaction window Claude Code takes (its ``--autocompact`` help: "at least 100k tokens")."""
COMPACT_AT = 0.8
"""Where in a smaller window Claude Code is made to compact: room left for its summary request."""


def compaction_settings(context_window: int) -> dict[str, str]:
    """Claude Code's compaction sized to the proxy's window: it takes a model it does not know for a 1M-token
    one and would never compact before the proxy's limit. ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` is the window;
    one under its least (100k) is that least with ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` lowered to compact at
    80% of the real one."""
    if context_window >= MIN_COMPACT_WINDOW:
        return {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(context_window)}
    percent = max(1, int(100 * COMPACT_AT * context_window / MIN_COMPACT_WINDOW))
    return {
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(MIN_COMPACT_WINDOW),
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": str(percent),
    }


QUIET = {
    "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}


@dataclass(frozen=True)
class ClaudeCodeHarness:
    """Claude Code, configured to the proxy (see the module docstring). ``tools``: the built-in tools it
    offers the model."""

    name: str = "claude-code"
    dialect: str = "anthropic_messages"
    packages: tuple[NpmPackage, ...] = (PACKAGE,)
    tools: tuple[str, ...] = TOOLS

    def __post_init__(self) -> None:
        if not self.tools or not all(isinstance(tool, str) and tool for tool in self.tools):
            raise ConfigError(f"tools must name at least one of Claude Code's tools, got {self.tools!r}")

    def launch(self, run: HarnessRun) -> Launch:
        tools = ",".join(self.tools)
        prompt = f"{run.home}/prompt.md"
        return Launch(
            argv=(
                run.package_path(PACKAGE.name, "bin", "claude.exe"),
                "--print",
                "--model",
                run.model,
                "--tools",
                tools,
                "--allowedTools",
                tools,
                "--permission-mode",
                "dontAsk",
                "--no-session-persistence",
                "--output-format",
                "json",
            ),
            env={
                "ANTHROPIC_BASE_URL": run.base_url,
                "ANTHROPIC_API_KEY": run.api_key,
                "CLAUDE_CONFIG_DIR": f"{run.home}/.claude",
                "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(run.max_output_tokens),
                **compaction_settings(run.context_window),
                **QUIET,
            },
            files={prompt: run.prompt},
            stdin=prompt,
        )

    def end(self, exit: HarnessExit) -> HarnessEnd:
        result = last_json_object(exit.output)
        if (
            exit.timed_out
            or exit.interrupted
            or not (result.get("type") == "result" and result.get("is_error"))
        ):
            return end_of_exit(self.name, exit)
        said = str(result.get("result") or result.get("subtype") or "")[-OUTPUT_TAIL_CHARS:]
        return HarnessEnd(
            False, "harness_failed", f"{self.name} ended on an error (exit status {exit.exit_code}): {said}"
        )


CLAUDE_CODE = ClaudeCodeHarness()
