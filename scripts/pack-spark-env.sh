#!/usr/bin/env bash
# Packs what Spark's executors need to run statestream's jobs on a real cluster
# (docs/how-to/spark-submit.md):
#   <out>/statestream-<version>-py3-none-any.whl   statestream as a wheel
#   <out>/spark-env/                               a venv with the wheel, the pipeline extra and
#                                                  their dependencies
#   <out>/statestream-spark-env.tar.gz             that venv packed by venv-pack (without
#                                                  pyspark/jars, ~150 MB), for
#                                                  spark-submit --archives …#environment
#   <out>/environment -> spark-env                 the same path for the driver, run from <out>
# Usage: scripts/pack-spark-env.sh [out folder, default dist]   (PYTHON=python3.11 by default)
# The venv's interpreter is a link to $PYTHON, as venv-pack packs it: every machine of the
# cluster needs the same Python 3.11 at that path. Needs the package index (pip).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-dist}
PYTHON=${PYTHON:-python3.11}

say() { printf 'pack-spark-env: %s\n' "$*"; }
die() { printf 'pack-spark-env: error: %s\n' "$*" >&2; exit 1; }

[[ -x .venv/bin/python ]] || die ".venv is missing: run make setup first"
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found: set PYTHON=/path/to/python3.11"
mkdir -p "$OUT"
rm -f "$OUT"/statestream-*.whl
say "building the wheel into $OUT"
.venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w "$OUT" . ||
  die "pip wheel failed (see above)"
say "installing it and its dependencies into $OUT/spark-env"
rm -rf "$OUT/spark-env"
"$PYTHON" -m venv "$OUT/spark-env" || die "'$PYTHON -m venv' failed: install python3.11-venv"
# with the pipeline extra: the executors run the pipeline's jobs, not only the library
wheel=$(echo "$OUT"/statestream-*.whl)
"$OUT/spark-env/bin/python" -m pip install -q "$wheel[pipeline]" venv-pack ||
  die "pip install failed (see above): check that the package index is reachable"
# the join engine's loops and the pairs' JSON writer compiled once here (~25 s) and packed with
# their numba caches: an executor loads them instead of compiling in its first batch (it
# compiles only on a CPU that numba's cache does not match)
say "compiling the join engine's loops into $OUT/spark-env"
"$OUT/spark-env/bin/python" -m statestream.precompile ||
  die "the join engine's loops did not compile (see above)"
say "packing $OUT/statestream-spark-env.tar.gz"
# without pyspark's jars (460 MB): the executors' JVM is the workers' Spark, their Python never
# reads a jar; the driver, spark-submit and the unpacked spark-env keep them
"$OUT/spark-env/bin/venv-pack" -q -p "$OUT/spark-env" -o "$OUT/statestream-spark-env.tar.gz" -f \
  --exclude 'lib/python3.11/site-packages/pyspark/jars/*' || die "venv-pack failed (see above)"
# the driver runs each transformWithStateInPandas processor once with the executors' Python
# (./environment/bin/python) to learn its state: spark-submit from <out> finds it there
ln -sfn spark-env "$OUT/environment"
say "done: from $OUT, spark-submit --archives statestream-spark-env.tar.gz#environment (docs/how-to/spark-submit.md)"
