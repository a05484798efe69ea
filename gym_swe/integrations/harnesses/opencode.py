"""OpenCode (npm ``opencode-ai``, a native binary in its npm package) as a harness.

Configured only through its documented settings (opencode.ai/docs: config, providers, CLI), all of them in
``OPENCODE_CONFIG_CONTENT``, the inline config that OpenCode applies over every config file (a repository's
own ``opencode.json`` included), and its environment:

- a custom provider ``gym_swe`` on the AI SDK's OpenAI-compatible client (``@ai-sdk/openai-compatible``,
  which OpenCode ships built in: nothing is fetched) at the proxy's chat completions base URL, the rollout's
  secret as its API key, and one model with the context and output limits the proxy allows; that model is
  the default (``model``) and the small model (``small_model``) for its helper agents;
- no update checks, no model list fetched from models.dev, no language servers downloaded, no sharing (the
  sandbox has no network: each would only fail or wait).

It runs as ``opencode run`` (non-interactive: one message, its agent's loop, exit), with ``--auto`` (its flag
for approving permission requests with no one to ask: the sandbox is the boundary) and a ``--title`` given,
so that it does not ask the model for a session title in a conversation of its own (the proxy would record
that as a fork, and generate a turn the policy never played). Its tools (bash, edit, write, read, ...) act
on the workspace it starts in. Exit 0 with a final answer is a submission (`end_of_exit`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gym_swe.integrations.harnesses.base import (
    HarnessEnd,
    HarnessExit,
    HarnessRun,
    Launch,
    NpmPackage,
    end_of_exit,
)

PACKAGE = NpmPackage("opencode-ai", "1.18.33")
PROVIDER = "gym_swe"
TITLE = "gym_swe episode"


@dataclass(frozen=True)
class OpenCodeHarness:
    """OpenCode, configured to the proxy (see the module docstring)."""

    name: str = "opencode"
    dialect: str = "chat_completions"
    packages: tuple[NpmPackage, ...] = (PACKAGE,)

    def launch(self, run: HarnessRun) -> Launch:
        model = f"{PROVIDER}/{run.model}"
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "gym_swe proxy",
                    "options": {"baseURL": run.base_url, "apiKey": run.api_key},
                    "models": {
                        run.model: {
                            "name": run.model,
                            "limit": {"context": run.context_window, "output": run.max_output_tokens},
                        }
                    },
                }
            },
            "model": model,
            "small_model": model,
        }
        binary = run.package_path(PACKAGE.name, "bin", "opencode.exe")
        argv = (binary, "run", "--model", model, "--title", TITLE, "--auto", "--", run.prompt)
        return Launch(
            argv=argv,
            env={
                "OPENCODE_CONFIG_CONTENT": json.dumps(config),
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            },
        )

    def end(self, exit: HarnessExit) -> HarnessEnd:
        return end_of_exit(self.name, exit)


OPENCODE = OpenCodeHarness()
