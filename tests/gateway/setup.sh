#!/usr/bin/env bash
# What tests/gateway/run.sh needs from the package registries, installed
# once (each part is skipped when already there): a venv under target/ with
# the pinned Python clients, chromium, chromium-driver and a CJK font from
# Debian, the npm packages (playwright-core, the charting library), and
# iproute2 for the loopback-only namespace. ci/run.sh runs it in the
# background at its start; run.sh runs it again (a no-op by then).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=ci/lib.sh
source ci/lib.sh

VENV="target/gateway-venv"
PINS=(pyarrow==26.0.1 mcp==2.3.0 openapi-spec-validator==0.9.0)
VENDORED="src/gateway/page/vendor/lightweight-charts.standalone.production.js"

pinned_venv "$VENV" "${PINS[@]}"
# A small CJK font, so that names in the screenshot are legible.
BROWSER_PACKAGES=(chromium chromium-driver fonts-wqy-microhei)
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ] ||
    [ ! -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; then
    apt_install "${BROWSER_PACKAGES[@]}"
fi
(cd tests/gateway && npm ci --no-audit --no-fund --loglevel=error)
# The page's chart library is the pinned package's file, unmodified.
if ! cmp -s "$VENDORED" tests/gateway/node_modules/lightweight-charts/dist/lightweight-charts.standalone.production.js; then
    echo "$VENDORED differs from the lightweight-charts package pinned in tests/gateway/package.json" >&2
    exit 1
fi
needs_ip
