"""`gym-swe view`'s page in a real headless Chromium: its script draws what the generated HTML only carries.

One test, driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``: no port, no network):
the page `gym-swe view RUN_DIR --tokenizer ...` writes is loaded from disk, then real mouse clicks and typed
text work it as a reader would, and the DOM is read back. Skipped without Chromium unless
GYM_SWE_REQUIRE_BROWSER=1 (`scripts/setup_system.sh --docker` installs Debian's chromium).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from gym_swe.rollout.trajectory import Trajectory, Turn, save_jsonl
from gym_swe.rollout.view_tokens import load_tokenizer
from tests.cli.shell import gym_swe
from tests.conftest import require_browser

TIMEOUT = 120.0  # a hang guard, not a speed check: a loaded machine starts Chromium slowly


def above_9(fd: int) -> int:
    """``fd`` moved to a number above 9 (the old one closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class DevTools:
    """A Chromium started headless with its DevTools protocol on fds 3 (commands in) and 4 (replies out),
    attached to one page: `call` sends a command and waits for its reply, keeping the events that came."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_browser, self._commands = os.pipe()
        self._replies, from_browser = os.pipe()
        # Chromium reads commands on fd 3 and answers on fd 4: bash puts the pipe ends there before it
        # execs it (moved above 9 first, so that neither end is already 3 or 4).
        to_browser, from_browser = above_9(to_browser), above_9(from_browser)
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                 "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]  # fmt: skip
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}', chromium, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_browser, from_browser),
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next = b"", 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._replies], [], [], max(deadline - time.monotonic(), 0))
            assert ready, "Chromium did not answer in time"
            chunk = os.read(self._replies, 1 << 16)
            assert chunk, "Chromium closed its DevTools pipe"
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        command: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self.session:
            command["sessionId"] = self.session
        os.write(self._commands, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._message(deadline)
            if message.get("id") == self._next:
                assert "error" not in message, message["error"]
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._message(deadline))

    def js(self, expression: str) -> Any:
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def until(self, expression: str) -> Any:
        """``expression``'s value once it is truthy (the page's search waits a moment after each key)."""
        deadline = time.monotonic() + TIMEOUT
        while not (value := self.js(expression)):
            assert time.monotonic() < deadline, f"never true: {expression}"
            time.sleep(0.05)
        return value

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) in the middle of the element ``selector`` finds."""
        box = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: "
            "'center'}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        os.close(self._commands)
        os.close(self._replies)


def run_dir(root: Path, tokenizer: Any) -> Path:
    """A training run's layout: two steps of one group of two samples, and an eval file; real token ids."""
    prompt = tokenizer.encode("Fix the bug in f.").ids
    sampled = tokenizer.encode("I will look at the file first").ids
    run = root / "run"

    def sample(task: str, index: int, reward: float, words: str) -> Trajectory:
        cut = index == 1  # its one turn stopped at max_tokens
        messages = [{"role": "user", "content": f"Fix {task}."}, {"role": "assistant", "content": words}]
        return Trajectory(task, index, messages=messages, reward=reward, token_ids=prompt + sampled,
                          loss_mask=[0] * len(prompt) + [1] * len(sampled), prompt_length=len(prompt),
                          logprobs=[None] * len(prompt) + [-0.1] * len(sampled), end_reason="submitted",
                          turns=[Turn(len(prompt), len(sampled), words, "length" if cut else "stop")],
                          grade={"resolved": reward == 1.0, "passed": int(reward), "total": 1},
                          error=None if index < 2 else "generator: down")  # fmt: skip

    save_jsonl([sample("t/0", 0, 1.0, "plain words"), sample("t/0", 1, 0.0, "a needle here")],
               run / "trajectories" / "step_00000.jsonl")  # fmt: skip
    save_jsonl([sample("t/0", 0, 0.0, "more words"), sample("t/0", 2, 0.0, "it failed")],
               run / "trajectories" / "step_00001.jsonl")  # fmt: skip
    save_jsonl([sample("t/1", 0, 1.0, "eval words")], run / "eval" / "step_00001.jsonl")
    return run


def test_the_page_in_a_real_browser(tmp_path: Path, shared_data: Path) -> None:
    chromium = require_browser()
    tokenizer_dir = shared_data / "tokenizers" / "qwen2.5-instruct"
    tokenizer = load_tokenizer(tokenizer_dir)
    run = run_dir(tmp_path, tokenizer)
    result = gym_swe("view", str(run), "--tokenizer", str(tokenizer_dir))
    assert result.returncode == 0, result.stderr
    page = run / "view.html"

    browser = DevTools(chromium, tmp_path / "profile")
    try:
        for domain in ("Runtime", "Page", "Network", "Log"):
            browser.call(f"{domain}.enable")
        browser.call(
            "Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False
        )
        browser.call("Page.navigate", url=page.as_uri())
        browser.wait_for_event("Page.loadEventFired")
        episodes = "[...document.querySelectorAll('details.episode')]"
        visible = f"{episodes}.filter(e => e.offsetParent !== null).map(e => e.id)"
        assert browser.js(f"{episodes}.length") == 5
        assert (
            browser.js("document.querySelectorAll('.body *').length") == 0
        )  # nothing drawn before it is opened

        # Expand all: every episode open, its body drawn from the page's data.
        browser.click("#expand")
        browser.until(
            f"{episodes}.every(e => e.open) && document.querySelectorAll('.body .context').length == 5"
        )
        assert browser.js("document.querySelector('#e1 .body').textContent").count("✂ cut at length") == 1

        # The token view of a cut episode: each token decoded, masks and the cut drawn.
        browser.click("#e1 details.tokens > summary")
        browser.until("document.querySelectorAll('#e1 .tokenview .tk').length > 0")
        ids = json.loads(page.read_text().split('id="gym-swe-data">')[1].split("</script>")[0])["tokens"][1][
            "ids"
        ]
        tokens = browser.js("[...document.querySelectorAll('#e1 .tokenview .tk')].map(t => t.textContent)")
        assert len(tokens) == len(ids) and "".join(tokens) == tokenizer.decode(ids)
        sampled = browser.js(
            "[...document.querySelectorAll('#e1 .tk.m1')].map(t => [t.textContent, t.title])"
        )
        assert "".join(text for text, _ in sampled) == "I will look at the file first"
        assert all("loss mask 1 · logprob -0.100 (p 0.905)" in title for _, title in sampled)
        assert browser.js("document.querySelectorAll('#e1 .tokenview .mark.cut').length") == 1

        # Search: only the episode whose text holds it stays, with the hits marked; empty groups go too.
        browser.click("#collapse")
        browser.click("#search")
        browser.call("Input.insertText", text="NEEDLE")
        browser.until("document.getElementById('matches').textContent == '1 of 5 episodes'")
        assert browser.js(visible) == ["e1"]
        assert browser.js("[...document.querySelectorAll('.group')].filter(g => g.offsetParent).length") == 1
        browser.click("#e1 > summary")
        browser.until("document.querySelectorAll('#e1 .body mark').length == 1")
        assert browser.js("document.querySelector('#e1 .body mark').textContent") == "needle"
        browser.click("#search")  # back to the box (the caret lands after the text), and erase it
        for _ in "NEEDLE":
            for kind in ("rawKeyDown", "keyUp"):
                browser.call("Input.dispatchKeyEvent", type=kind, key="Backspace", code="Backspace",
                             windowsVirtualKeyCode=8)  # fmt: skip
        browser.until(f"{visible}.length == 5")

        # The outcome buttons, and a group's link to one of its samples.
        browser.click("input[name=show][value=failed]")
        browser.until(f"{visible}.length == 1")
        assert browser.js(visible) == ["e3"]
        browser.click("input[name=show][value=all]")
        browser.click("#collapse")
        browser.click('a[href="#e2"]')
        browser.until("document.getElementById('e2').open")

        # Self-contained: it asked for nothing but its own file, and its script raised nothing.
        browser.js("1")  # collect what arrived
        urls = [
            e["params"]["request"]["url"]
            for e in browser.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        assert urls and all(url == page.as_uri() for url in urls), urls
        errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
        errors += [
            e
            for e in browser.events
            if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"
        ]
        assert not errors, errors
    finally:
        browser.close()
