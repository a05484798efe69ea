"""Gemini CLI (npm ``@google/gemini-cli``), Google's coding agent, as a harness: Google generateContent.

Configured only through its documented settings (``docs/reference/configuration.md`` in its package:
environment variables and ``settings.json`` keys), with its home one gym_swe makes (``GEMINI_CLI_HOME``, whose
``.gemini/settings.json`` is written here):

- ``GOOGLE_GEMINI_BASE_URL`` the proxy (plain HTTP is allowed to localhost, where the forwarder listens),
  ``GEMINI_API_KEY`` the rollout's secret with the API-key sign-in (``security.auth.selectedType``),
  ``--model`` the proxy's model name;
- its tools: its own core file and shell tools (``tools.core``: ``run_shell_command``, ``read_file``,
  ``replace``, ``write_file``, ``list_directory``, ``glob``, ``grep_search``), every call approved
  (``--approval-mode yolo``), the workspace trusted (``GEMINI_CLI_TRUST_WORKSPACE``); no web tools, no
  sub-agents, no plan mode;
- no completions besides the agent's own turns: no loop detection by a model
  (``model.disableLoopDetection``), no next-speaker check, no edit correction by a model
  (``tools.disableLLMCorrection``); no usage statistics, telemetry or update checks.

It runs headless (``--prompt``: one task, the agent's loop until the model answers without a tool call, then
exit), the task on stdin (appended to an empty ``--prompt``, as its docs say), its result as JSON on stdout
(``--output-format json``). It always streams (``:streamGenerateContent``). Exit 0 is a final answer; a
request the proxy refused ends it with a non-zero exit and a JSON error, whose message is the failure's
error (not the stack trace it prints before it).
"""

from __future__ import annotations

import json
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

PACKAGE = NpmPackage("@google/gemini-cli", "0.61.0")
TOOLS = (
    "run_shell_command",
    "read_file",
    "replace",
    "write_file",
    "list_directory",
    "glob",
    "grep_search",
)
"""Gemini CLI's own tools for working on a codebase (its built-in tools documentation names them)."""


@dataclass(frozen=True)
class GeminiCliHarness:
    """Gemini CLI, configured to the proxy (see the module docstring). ``tools``: the built-in tools it
    offers the model."""

    name: str = "gemini-cli"
    dialect: str = "google_generate"
    packages: tuple[NpmPackage, ...] = (PACKAGE,)
    tools: tuple[str, ...] = TOOLS

    def __post_init__(self) -> None:
        if not self.tools or not all(isinstance(tool, str) and tool for tool in self.tools):
            raise ConfigError(f"tools must name at least one of Gemini CLI's tools, got {self.tools!r}")

    def launch(self, run: HarnessRun) -> Launch:
        settings = {
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "security": {
                "auth": {"selectedType": "gemini-api-key"},
                # the API key kept out of the commands it runs
                "environmentVariableRedaction": {"enabled": True, "blocked": ["GEMINI_API_KEY"]},
            },
            "model": {"disableLoopDetection": True, "skipNextSpeakerCheck": True},
            "tools": {"core": list(self.tools), "disableLLMCorrection": True},
        }
        prompt = f"{run.home}/prompt.md"
        return Launch(
            argv=(
                run.node,
                run.package_path(PACKAGE.name, "bundle", "gemini.js"),
                "--model",
                run.model,
                "--approval-mode",
                "yolo",
                "--output-format",
                "json",
                "--prompt",
                "",
            ),
            env={
                "GOOGLE_GEMINI_BASE_URL": run.base_url,
                "GEMINI_API_KEY": run.api_key,
                "GEMINI_CLI_HOME": run.home,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
                "GEMINI_TELEMETRY_ENABLED": "false",
            },
            files={f"{run.home}/.gemini/settings.json": json.dumps(settings, indent=2), prompt: run.prompt},
            stdin=prompt,
        )

    def end(self, exit: HarnessExit) -> HarnessEnd:
        error = last_json_object(exit.output).get("error")
        if exit.timed_out or exit.interrupted or exit.exit_code == 0 or not isinstance(error, dict):
            return end_of_exit(self.name, exit)
        said = str(error.get("message") or error)[-OUTPUT_TAIL_CHARS:]
        return HarnessEnd(False, "harness_failed", f"{self.name} exited with status {exit.exit_code}: {said}")


GEMINI_CLI = GeminiCliHarness()
