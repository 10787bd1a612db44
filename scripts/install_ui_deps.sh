#!/usr/bin/env bash
# Debian's Chromium and its WebDriver, for tests/env/test_ui_browser.py (Debian 12). Idempotent:
# does nothing when both binaries are already installed. Needs root (CI runs as root).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium chromium-driver fonts-dejavu-core
