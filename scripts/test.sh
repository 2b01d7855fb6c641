#!/usr/bin/env bash
# Set everything up and run the test suite (including the slow tests that run the embedded model and
# train 2 GRPO steps per recipe). Extra arguments go to pytest, e.g. scripts/test.sh -k protocols.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
exec python -m pytest -q --runslow "$@"
