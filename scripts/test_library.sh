#!/usr/bin/env bash
# The library's version matrix (`make test` runs it after the suite, `make test-library` alone):
# statestream installed as `pip install statestream` installs it, without the pipeline extra, on
# the oldest and the newest Python and PySpark it supports, each running tests/library in a plain
# SparkSession of its own (tests/library/conftest.py) and the as-of core's property tests:
#   .deps/library/py3.10-pyspark4.0.5/   Python 3.10, PySpark 4.0.5 (4.0's latest)
#   .deps/library/py3.13-pyspark4.3.0/   Python 3.13, PySpark 4.3.0
# A venv is made again when pyproject.toml changes; statestream is reinstalled into it from a
# wheel (built with .venv, from a copy of the sources) when src/ changes, and the join engine's
# loops compiled once there. A missing interpreter fails the run: found as python3.10 and
# python3.13 on the PATH, else under pyenv (~/.pyenv/versions/3.10.*/bin/python3.10), or given as
# PYTHON310=… PYTHON313=…. Needs the package index (pip) when a venv is made.
# Usage: scripts/test_library.sh [pytest args …]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MATRIX=("3.10 4.0.5" "3.13 4.3.0") # (Python, PySpark): the oldest and the newest supported
TOOLS=("pytest>=8" "hypothesis>=6.100" "polars>=1.0")
# the as-of core's property tests (Hypothesis: pandas.merge_asof's and polars.join_asof's
# matches, stream = batch over random splits), pure numpy, run on each combination's Python,
# numpy and pandas as well
PROPERTIES=(tests/join/test_asof.py tests/join/test_asof_polars.py tests/join/test_asof_stream.py)
ROOT=.deps/library

say() { printf 'test-library: %s\n' "$*"; }
die() {
  printf '\ntest-library: FAILED: %s\n\n' "$*" >&2
  exit 1
}

# find_python 3.10: the path of a Python 3.10 (PYTHON310, python3.10, pyenv's), or nothing
find_python() {
  local version=$1 given candidate
  given=PYTHON${version/./}
  for candidate in ${!given:-} "python$version" \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/"python$version"; do
    "$candidate" -c "import sys, ensurepip; assert sys.version.startswith('$version.')" \
      >/dev/null 2>&1 || continue
    "$candidate" -c 'import sys; print(sys.executable)'
    return 0
  done
  return 1
}

# source_hash: what the wheel is built from
source_hash() {
  find src pyproject.toml README.md -type f -not -path '*/__pycache__/*' -not -path '*.egg-info/*' \
    -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}

# the wheel of this checkout, built once per run from a copy of its sources (an in-tree build
# would package whatever an earlier build left in build/)
WHEEL=""
build_wheel() {
  [[ -z $WHEEL ]] || return 0
  [[ -x .venv/bin/python ]] || die ".venv is missing: run make setup first (it builds the wheel)"
  local copy
  copy=$(mktemp -d)
  tar -cf - --exclude=__pycache__ --exclude='*.egg-info' pyproject.toml README.md src |
    tar -xf - -C "$copy"
  rm -rf "$ROOT/wheel" && mkdir -p "$ROOT/wheel"
  (cd "$copy" && "$OLDPWD/.venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation \
    -w "$OLDPWD/$ROOT/wheel" .) || die "building statestream's wheel failed (see above)"
  rm -rf "$copy"
  WHEEL=$(echo "$ROOT"/wheel/statestream-*.whl)
}

# prepare PYTHON_PATH SPARK VENV: VENV with statestream's wheel and nothing else of ours (no
# extra: its own requirements bring PySpark's sql and connect parts), PySpark pinned to SPARK,
# the test tools, the engine's loops compiled
prepare() {
  local python=$1 spark=$2 venv=$3 want_deps want_source started=$SECONDS
  want_deps=$(cat pyproject.toml <("$python" -V) <(echo "$spark ${TOOLS[*]}") |
    sha256sum | cut -c1-16)
  want_source=$(source_hash)
  if [[ ! -x $venv/bin/python || $(cat "$venv/.deps-hash" 2>/dev/null) != "$want_deps" ]]; then
    say "making $venv ($("$python" -V), pyspark $spark, statestream without extras)"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "'$python -m venv $venv' failed"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    build_wheel
    "$venv/bin/python" -m pip install -q "$WHEEL" "pyspark==$spark" "${TOOLS[@]}" ||
      die "pip install into $venv failed (see above): check that the package index is reachable"
    echo "$want_deps" >"$venv/.deps-hash"
  elif [[ $(cat "$venv/.source-hash" 2>/dev/null) != "$want_source" ]]; then
    say "reinstalling statestream into $venv (src/ changed)"
    build_wheel
    "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "$WHEEL" ||
      die "pip install $WHEEL into $venv failed (see above)"
  else
    say "$venv is up to date"
    return 0
  fi
  # the engine's loops, compiled once into the venv's numba caches (not in each Spark worker)
  "$venv/bin/python" -c 'import statestream.join.things, statestream.join.name_index' ||
    die "the join engine did not import in $venv (see above)"
  echo "$want_source" >"$venv/.source-hash"
  say "$venv ready in $((SECONDS - started)) s"
}

failed=()
for combination in "${MATRIX[@]}"; do
  read -r version spark <<<"$combination"
  python=$(find_python "$version") ||
    die "Python $version not found (python$version, ~/.pyenv/versions/$version.*): install it (pyenv install $version) or set PYTHON${version/./}=/path/to/python$version"
  venv=$ROOT/py$version-pyspark$spark
  prepare "$python" "$spark" "$venv"
  say "pytest tests/library and the as-of properties with Python $version, PySpark $spark"
  started=$SECONDS
  # the venv as a user's activated one: its pytest, its python for Spark's workers; the main
  # suite's conftest (settings, services) left out, the library's gives a plain SparkSession
  # then the Spark Connect tests, in a process of their own (a local Connect server cannot
  # share a process with the classic session of the first run)
  if PATH="$PWD/$venv/bin:$PATH" VIRTUAL_ENV="$PWD/$venv" "$venv/bin/python" -m pytest -q \
    -p no:cacheprovider --confcutdir=tests/library tests/library "${PROPERTIES[@]}" "$@" &&
    PATH="$PWD/$venv/bin:$PATH" VIRTUAL_ENV="$PWD/$venv" STATESTREAM_CONNECT_TESTS=1 \
      "$venv/bin/python" -m pytest -q -p no:cacheprovider --confcutdir=tests/library \
      tests/library/test_connect.py "$@"; then
    say "Python $version, PySpark $spark: passed in $((SECONDS - started)) s"
  else
    status=$?
    [[ $status -ne 5 ]] || say "pytest ran no test with Python $version, PySpark $spark"
    failed+=("Python $version, PySpark $spark")
  fi
done
[[ ${#failed[@]} -eq 0 ]] || die "tests/library failed with ${failed[*]}"
say "the library passed with Python and PySpark ${MATRIX[*]}"
