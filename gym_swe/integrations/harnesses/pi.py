"""Pi (npm ``@mariozechner/pi-coding-agent``), the coding agent the OpenEnv harness PR drives, as a harness.

Configured only through its documented settings (its ``docs/models.md``, ``docs/settings.md``,
``docs/usage.md``), in a config directory gym_swe writes (``PI_CODING_AGENT_DIR``):

- ``models.json``: a custom provider ``gym_swe`` on the OpenAI chat completions API (``openai-completions``,
  the API its docs call the most compatible) at the proxy, the rollout's secret as its API key, and one
  model with the context window and output budget the proxy allows. ``compat`` says what a
  chat-template server takes: the system prompt as a ``system`` message (not ``developer``), no
  ``reasoning_effort``, no ``store``;
- ``settings.json``: that model as the default; no retries (Pi's own, or its SDK's: a refusal of the proxy,
  a spent budget, is final, and a retry would only wait); compaction sized to the proxy's window (the room
  it keeps for an answer is the proxy's ``max_tokens``, not Pi's 16384, which a trainer's 4096-token window
  could never leave: Pi would summarize its history after every turn); a quiet start.

It runs in print mode (``--print``: one prompt, the agent's loop until the model stops calling tools, then
exit), with no session file (``--no-session``) and no network checks at start (``PI_OFFLINE``), the task
piped on stdin as its docs show. Its tools are its defaults (read, bash, edit, write), acting on the
workspace it starts in. Exit 0 with a final answer is a submission; an error of its last request (the proxy
ending the rollout) exits 1 (`end_of_exit`).
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

PACKAGE = NpmPackage("@mariozechner/pi-coding-agent", "0.73.1")
PROVIDER = "gym_swe"
KEEP_RECENT_TOKENS = 20000  # Pi's default: what compaction keeps of the latest conversation


@dataclass(frozen=True)
class PiHarness:
    """Pi, configured to the proxy (see the module docstring)."""

    name: str = "pi"
    dialect: str = "chat_completions"
    packages: tuple[NpmPackage, ...] = (PACKAGE,)

    def launch(self, run: HarnessRun) -> Launch:
        agent_dir = f"{run.home}/.pi/agent"
        models = {
            "providers": {
                PROVIDER: {
                    "baseUrl": run.base_url,
                    "api": "openai-completions",
                    "apiKey": run.api_key,
                    "compat": {
                        "supportsDeveloperRole": False,
                        "supportsReasoningEffort": False,
                        "supportsStore": False,
                    },
                    "models": [
                        {
                            "id": run.model,
                            "contextWindow": run.context_window,
                            "maxTokens": run.max_output_tokens,
                        }
                    ],
                }
            }
        }
        settings = {
            "defaultProvider": PROVIDER,
            "defaultModel": run.model,
            "retry": {"enabled": False, "provider": {"maxRetries": 0}},
            # Its defaults are sized for a 200k-token window (16384 reserved for the answer, 20000 kept):
            # in a trainer's smaller one they would compact the history after every turn.
            "compaction": {
                "reserveTokens": run.max_output_tokens,
                "keepRecentTokens": min(KEEP_RECENT_TOKENS, run.context_window // 2),
            },
            "quietStartup": True,
            "enableInstallTelemetry": False,
        }
        prompt = f"{run.home}/prompt.md"
        cli = run.package_path(PACKAGE.name, "dist", "cli.js")
        argv = (run.node, cli, "--print", "--no-session", "--provider", PROVIDER, "--model", run.model)
        return Launch(
            argv=argv,
            env={"PI_CODING_AGENT_DIR": agent_dir, "PI_OFFLINE": "1"},
            files={
                f"{agent_dir}/models.json": json.dumps(models, indent=2),
                f"{agent_dir}/settings.json": json.dumps(settings, indent=2),
                prompt: run.prompt,
            },
            stdin=prompt,
        )

    def end(self, exit: HarnessExit) -> HarnessEnd:
        return end_of_exit(self.name, exit)


PI = PiHarness()
