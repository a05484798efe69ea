#!/usr/bin/env bash
# Installs the system packages gym_swe's sandboxes need, and with --docker makes sure a Docker daemon runs.
#   scripts/setup_system.sh            bubblewrap (the local sandbox), and git, patch, python3-pytest, -venv,
#                                      npm (it installs the agent harnesses: gym-swe harnesses install)
#   scripts/setup_system.sh --docker   also docker.io and debootstrap, and starts dockerd if none answers; and
#                                      chromium, without its recommended packages (the test suite opens
#                                      gym-swe view's page in it, headless: tests/rollout/test_view_browser.py)
# Debian/Ubuntu (apt). Elsewhere it says what to install and exits non-zero if it is missing.
set -euo pipefail

want_docker=0
[ "${1:-}" = "--docker" ] && want_docker=1
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

packages=()
command -v bwrap >/dev/null 2>&1 || packages+=(bubblewrap)
# What agent commands find inside a local jail (it shows the system's /usr): git, patch, and pytest for
# the system python3.
command -v git >/dev/null 2>&1 || packages+=(git)
command -v patch >/dev/null 2>&1 || packages+=(patch)
/usr/bin/python3 -c "import pytest" >/dev/null 2>&1 || packages+=(python3-pytest)
/usr/bin/python3 -c "import ensurepip" >/dev/null 2>&1 || packages+=(python3-venv)  # prepared environments
# npm downloads the agent harnesses and the Node they run on (which gym_swe installs, not this system's).
command -v npm >/dev/null 2>&1 || packages+=(npm)
if [ "$want_docker" = 1 ]; then
    command -v dockerd >/dev/null 2>&1 || packages+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || packages+=(debootstrap)
fi

if [ "${#packages[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "Please install: ${packages[*]} (no apt-get here)" >&2
        exit 1
    fi
    echo "installing ${packages[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# Chromium alone, without recommends: they would bring a desktop's worth of services (cups, avahi, upower).
if [ "$want_docker" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "Please install: chromium (no apt-get here)" >&2
        exit 1
    fi
    echo "installing chromium"
    [ "${#packages[@]}" -gt 0 ] || $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

if [ "$want_docker" = 1 ] && ! docker info >/dev/null 2>&1; then
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        $sudo systemctl start docker
    else
        echo "starting dockerd (log: /tmp/gym_swe-dockerd.log)"
        $sudo setsid dockerd >/tmp/gym_swe-dockerd.log 2>&1 < /dev/null &
    fi
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || { echo "dockerd did not come up; see /tmp/gym_swe-dockerd.log" >&2; exit 1; }
fi
