#!/usr/bin/env bash
# System packages the pipeline and its tests need (Debian 12). Idempotent.
set -euo pipefail
exit 0
