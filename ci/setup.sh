#!/usr/bin/env bash
# What the interop and gateway steps need from the package registries (the
# interop venv with the pinned third-party clients, the gateway's venv,
# chromium and npm packages, iproute2), installed up front: ci/run.sh runs
# this in the background while it lints and builds, so the downloads are off
# its critical path. Each part is skipped when already there, and the steps
# run their own setup again (a no-op by then).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tests/interop/lib.sh
source tests/interop/lib.sh # the interop venv, at source time
bash tests/gateway/setup.sh
