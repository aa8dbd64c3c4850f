#!/usr/bin/env bash
# Installs what the browser tests of the HTML graph page need (tests/test_viz_browser.py):
# Debian's Chromium and Playwright from PyPI (its own browser download skipped: the tests
# drive /usr/bin/chromium). Without them those tests skip.
set -euo pipefail
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
$SUDO apt-get update
$SUDO apt-get install -y chromium
python3 -m pip install playwright
