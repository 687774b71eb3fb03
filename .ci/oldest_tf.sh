#!/usr/bin/env bash
# The oldest supported TensorFlow: a second virtual environment with tensorflow-cpu 2.15 runs the
# core tests (recorder, explainer, report, magic, faults) and the Keras callback on the Keras 2
# that TF 2.15 bundles. Run by tests/project/test_oldest_tf.py under CI=true (inside the README's
# test command); usable alone: `.ci/oldest_tf.sh`
# (fresh venv) or `.ci/oldest_tf.sh --reuse` (keep the venv if it already has the right
# TensorFlow).
#
# TF 2.15 wheels exist for CPython 3.9-3.11 only; PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${OLDEST_TF_VENV:-.venv-tf215}
TF_SPEC=${OLDEST_TF_SPEC:-tensorflow-cpu==2.15.*}
CORE_TESTS=(
  tests/watching/test_recorder.py
  tests/explain/test_explain.py
  tests/report/test_report.py
  tests/faces/test_magic.py
  tests/faces/test_magic_kernel.py
  tests/watching/test_budget.py
  tests/faces/test_cli.py
  tests/adapter/test_faults.py
  tests/project/test_safety.py
  tests/keras/test_keras2.py  # TraceCallback on Keras 2 (tf.keras 2.15); skipped on Keras 3
  tests/recording/test_xla_log.py  # XLA counts against TF 2.15's own compile log (tsl's line format)
  tests/recording/test_xla_caveats.py  # fixes under XLA and a strategy, against TF 2.15's own counts
  tests/keras/test_redteam_keras.py  # a failing fit/evaluate/predict unpatches at once, Keras 2 too
  tests/watching/test_redteam_api.py  # incl. a trace begun before the watch (TF's __call__ frame, 2.15)
  tests/lessons/test_lesson_claims.py  # every claim the lessons teach, on TF 2.15 too (Keras 2's counts where they differ)
  tests/lessons/test_lesson_claims_extras.py
)

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export TF_CPP_MIN_LOG_LEVEL=3 TF_ENABLE_ONEDNN_OPTS=0

reuse=0
if [ "${1:-}" = "--reuse" ]; then reuse=1; shift; fi

py_minor=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$py_minor" in
  3.9|3.10|3.11) ;;
  *) echo "oldest_tf.sh: $TF_SPEC has no wheel for Python $py_minor; set PYTHON to a 3.9-3.11 interpreter" >&2
     exit 2 ;;
esac

if [ "$reuse" = 1 ] && [ -x "$VENV/bin/python" ] \
   && "$VENV/bin/python" -c 'import tensorflow as tf, sys; sys.exit(not tf.__version__.startswith("2.15."))' 2>/dev/null; then
  echo "oldest_tf.sh: reusing $VENV"
else
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # TensorFlow first with its own dependencies (TF 2.15 pins numpy<2 and brings Keras 2.15);
  # then the project WITH its dependencies, as a user with TensorFlow installs it: it names no
  # TensorFlow outside its `tf` extra, so TF 2.15 stays (the version line below shows it).
  # IPython 8 here, 9 in the main environment: they count cells differently (test_magic*.py).
  "$VENV/bin/python" -m pip install -q "$TF_SPEC"
  "$VENV/bin/python" -m pip install -q -e . "ipython>=8,<9" "pytest>=8" pytest-timeout "hypothesis>=6" psutil \
    nbformat nbclient ipykernel
fi

"$VENV/bin/python" - <<'EOF'
import re
from importlib import metadata

import IPython
import numpy
import tensorflow as tf

print(f"oldest_tf.sh: TensorFlow {tf.__version__}, numpy {numpy.__version__}, IPython {IPython.__version__}")
names = {re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version for d in metadata.distributions()}
held = sorted(f"{n}=={v}" for n, v in names.items() if n.startswith(("tensorflow", "tf-nightly")) and
              n not in ("tensorflow-io-gcs-filesystem", "tensorflow-estimator", "tensorflow-io"))
print("oldest_tf.sh: TensorFlow distributions:", " ".join(held))
EOF

# addopts name nbval (not installed here; the lessons are checked on the newest TF only).
"$VENV/bin/python" -m pytest -o addopts="" --strict-markers -ra -p no:cacheprovider -q "${CORE_TESTS[@]}" "$@"
