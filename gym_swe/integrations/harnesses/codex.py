"""Codex CLI (npm ``@openai/codex``), OpenAI's coding agent, as a harness: the OpenAI Responses API.

Configured only through its documented settings (its config reference: ``config.toml`` keys and feature
flags, checked against this version with ``codex exec --strict-config``), in a ``CODEX_HOME`` gym_swe writes:

- a model provider ``gym_swe`` on the Responses API (``wire_api = "responses"``) at the proxy, its API key
  read from an environment variable (``env_key``), no retries (a refusal of the proxy, a spent budget, is
  final); the model's context window as the proxy allows it (``model_context_window``: what Codex fills
  before it compacts its history);
- ``approval_policy = "never"`` and ``sandbox_mode = "danger-full-access"``: the episode's sandbox is the
  sandbox (Codex's own would need the user namespaces a jail denies), and nobody is there to approve;
- nothing that needs a network or another model: ``web_search = "disabled"``, no sub-agents
  (``agents.enabled``), no goals, plugins or apps (their features off: plugins and apps reach out at start),
  no analytics, no update check;
- ``allow_login_shell = false``: its shell tool runs ``bash -c``, not a login shell, whose profile would
  reset ``PATH`` and lose the ``apply_patch`` command Codex puts on it.

It runs as ``codex exec`` (one task, the agent's loop until the model answers without a tool call, then
exit), ephemeral (no session files), the task on stdin. Its tools are what it gives a model it has no
metadata for: ``exec_command`` (its unified shell) and ``write_stdin``, with ``apply_patch`` run through the
shell (Codex intercepts and applies it itself), plus ``request_user_input`` and ``view_image``. Codex puts
its ``apply_patch`` helpers in ``CODEX_HOME`` only when that is not under the temporary directory, so the
run's ``TMPDIR`` is a directory of its own. (A model it has metadata for, from a ``model_catalog_json``, could
get ``apply_patch`` as a Responses "custom" freeform tool, which a chat template cannot render: the proxy
refuses it with a 400 naming the tool; none is configured here.)

It streams every answer (there is no setting for whole ones). Past ``model_auto_compact_token_limit`` it
compacts: a summary asked for without tools, then a history made of it (two new segments). Exit 0 is a final
answer; a request the proxy refused ends it with 1 (`end_of_exit`), and so does a reply cut at the sampling
budget (an incomplete response), which the runner grades as truncated (``max_tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gym_swe.errors import ConfigError
from gym_swe.integrations.harnesses.base import (
    HarnessEnd,
    HarnessExit,
    HarnessRun,
    Launch,
    NpmPackage,
    end_of_exit,
)

PACKAGE = NpmPackage("@openai/codex", "0.171.0")
PROVIDER = "gym_swe"
API_KEY_VARIABLE = "GYM_SWE_API_KEY"
"""The variable the provider's ``env_key`` names; kept out of the commands Codex runs
(``shell_environment_policy.exclude``)."""
STREAM_IDLE_MS = 30 * 60 * 1000
"""How long Codex waits for the proxy's answer (it comes whole once generated): a slow generator is not a
dead connection; the runner's timeout bounds the run."""


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


@dataclass(frozen=True)
class CodexHarness:
    """Codex CLI, configured to the proxy (see the module docstring)."""

    name: str = "codex"
    dialect: str = "responses"
    packages: tuple[NpmPackage, ...] = (PACKAGE,)
    auto_compact_token_limit: int | None = None
    """Tokens of history past which Codex compacts it (``model_auto_compact_token_limit``; None: its
    default, 90% of the context window). A compaction is a rewritten history: a new segment."""

    def __post_init__(self) -> None:
        limit = self.auto_compact_token_limit
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ConfigError(f"auto_compact_token_limit must be a positive int or None, got {limit!r}")

    def launch(self, run: HarnessRun) -> Launch:
        codex_home = f"{run.home}/.codex"
        scratch = f"{run.home}/tmp"
        config = "\n".join(
            [
                f"model = {toml_string(run.model)}",
                f'model_provider = "{PROVIDER}"',
                f"model_context_window = {run.context_window}",
                *(
                    [f"model_auto_compact_token_limit = {self.auto_compact_token_limit}"]
                    if self.auto_compact_token_limit is not None
                    else []
                ),
                'approval_policy = "never"',
                'sandbox_mode = "danger-full-access"',
                'web_search = "disabled"',
                "allow_login_shell = false",
                "check_for_update_on_startup = false",
                "",
                "[shell_environment_policy]",
                f'exclude = ["{API_KEY_VARIABLE}"]',
                "",
                "[analytics]",
                "enabled = false",
                "",
                "[agents]",
                "enabled = false",
                "",
                "[features]",
                "goals = false",
                "plugins = false",
                "apps = false",
                "",
                f"[model_providers.{PROVIDER}]",
                'name = "gym_swe proxy"',
                f"base_url = {toml_string(run.base_url)}",
                f'env_key = "{API_KEY_VARIABLE}"',
                'wire_api = "responses"',
                "request_max_retries = 0",
                "stream_max_retries = 0",
                f"stream_idle_timeout_ms = {STREAM_IDLE_MS}",
                "",
            ]
        )
        prompt = f"{run.home}/prompt.md"
        return Launch(
            argv=(
                run.node,
                run.package_path(PACKAGE.name, "bin", "codex.js"),
                "exec",
                "--strict-config",  # a setting this version does not know is an error, not ignored
                "--ephemeral",
                "--skip-git-repo-check",  # a CodeDebug workspace is no git repository
                "--color",
                "never",
                "-",  # the task, from stdin
            ),
            env={"CODEX_HOME": codex_home, "TMPDIR": scratch, API_KEY_VARIABLE: run.api_key},
            files={
                f"{codex_home}/config.toml": config,
                f"{scratch}/.keep": "",  # the directory exists before Codex or its commands use it
                prompt: run.prompt,
            },
            stdin=prompt,
        )

    def end(self, exit: HarnessExit) -> HarnessEnd:
        return end_of_exit(self.name, exit)


CODEX = CodexHarness()
