#!/usr/bin/env bash
# Installs everything statestream needs on this machine, idempotently (`make setup` runs it):
#   1. Python 3.11 with venv, a JDK 17, Maven, Node.js with npm, mosquitto, influxdb,
#      influxdb-client and chromium through apt-get  (skipped when installed)
#   2. .venv with `pip install -e ".[pipeline,dev]"`: the library, the pipeline and the tools
#      (skipped while pyproject.toml is unchanged)
#   3. the JVM jars, copied by Maven into .deps/jars/<name>  (skipped while each pom is unchanged)
#   4. jvm/local-fs and jvm/exactly-once compiled into .deps/jars/<name>  (skipped while their
#      sources are unchanged)
#   5. the dashboard's browser libraries: `npm ci` in dashboard-assets/, copied into
#      src/statestream/dashboard/static/vendor/  (skipped while package-lock.json is unchanged)
#   6. the driver JVM's class archive in .deps/class-archive/  (skipped while Java and the
#      driver's jars are unchanged)
# Services are not started here (`statestream services up` does that, as plain processes), and a
# service instance that apt-get would start is stopped again, so it cannot hold statestream's ports.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }
# up_to_date STAMP WANT: the step that wrote STAMP ran for inputs whose hash is WANT
up_to_date() { [[ -f $1 && $(cat "$1") == "$2" ]]; }

python_env() {
  local stamp=.venv/.statestream-installed want
  want=$(hash_of pyproject.toml)
  if [[ -x .venv/bin/python ]] && up_to_date "$stamp" "$want"; then
    say "python environment .venv is up to date"
    return
  fi
  local python=${PYTHON:-}
  if [[ -z $python ]]; then
    for candidate in python3.11 python3; do
      if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
        python=$candidate
        break
      fi
    done
  fi
  [[ -n $python ]] || die "Python 3.11 not found: install python3.11 (and python3.11-venv), or set PYTHON=/path/to/python3.11"
  if [[ ! -x .venv/bin/python ]]; then
    say "creating .venv with $python"
    "$python" -m venv .venv || die "'$python -m venv' failed: install the venv module (apt-get install python3-venv) and run make setup again"
  fi
  say "installing statestream and its dependencies into .venv (pip install -e .[pipeline,dev])"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[pipeline,dev]" ||
    die "pip install failed (see above): check that the Python package index is reachable, then run make setup again"
  echo "$want" >"$stamp"
}

require_java() {
  command -v java >/dev/null 2>&1 ||
    die "Java is missing: install a JDK 17 (apt-get install openjdk-17-jdk-headless) and run make setup again"
  local version
  version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
  [[ ${version:-0} -ge 17 ]] ||
    die "Java ${version:-?} is too old: Kafka 4 and Spark 4 need Java 17 or newer; install a JDK 17 and run make setup again"
}

jvm_jars() {
  local name=$1 pom=jvm/$1/pom.xml target=.deps/jars/$1 want
  want=$(hash_of "$pom")
  if up_to_date "$target/.pom-hash" "$want"; then
    say "jars .deps/jars/$name are up to date"
    return
  fi
  require_java
  command -v mvn >/dev/null 2>&1 ||
    die "Maven is missing: install it (apt-get install maven) and run make setup again"
  say "copying the $name jars with Maven into .deps/jars/$name"
  local fresh=$target.new log=$ROOT/.deps/mvn-$name.log
  rm -rf "$fresh" && mkdir -p "$fresh"
  if ! (cd "jvm/$name" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$ROOT/$fresh") >"$log" 2>&1; then
    rm -rf "$fresh"
    die "Maven could not fetch the $name jars (log: $log): check that Maven Central is reachable (proxy settings in ~/.m2/settings.xml), then run make setup again"
  fi
  echo "$want" >"$fresh/.pom-hash"
  rm -rf "$target" && mv "$fresh" "$target"
}

has_program() { command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 || -x /sbin/$1 ]]; }

# python3.11 (or python3 being 3.11) with its venv module; PYTHON, when set, is the user's choice
has_python311() {
  [[ -n ${PYTHON:-} ]] && return 0
  local candidate
  for candidate in python3.11 python3; do
    command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys, ensurepip; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null &&
      return 0
  done
  return 1
}

system_packages() {
  local missing=()
  has_python311 || missing+=(python3.11 python3.11-venv)
  has_program javac || missing+=(openjdk-17-jdk-headless) # runs the JVMs, compiles jvm/*
  has_program mvn || missing+=(maven)                     # fetches the JVM jars
  has_program npm || missing+=(nodejs npm)                # fetches the dashboard's libraries
  has_program mosquitto && has_program mosquitto_passwd || missing+=(mosquitto)
  has_program influxd || missing+=(influxdb)
  has_program influx || missing+=(influxdb-client)
  has_program chromium || missing+=(chromium) # the dashboard's browser tests drive it
  if [[ ${#missing[@]} -eq 0 ]]; then
    say "python 3.11, a JDK, maven, npm, mosquitto, influxdb and chromium are installed"
    return
  fi
  command -v apt-get >/dev/null 2>&1 ||
    die "${missing[*]} missing and no apt-get here: install them with your package manager (influxdb 1.x), then run make setup again"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 ||
      die "${missing[*]} missing: run make setup as root (or install sudo) so apt-get can install them"
    sudo=(sudo)
  fi
  say "installing ${missing[*]} with apt-get"
  "${sudo[@]}" apt-get update -q >/dev/null ||
    die "apt-get update failed: the Debian package mirror is unreachable; check the network or /etc/apt/sources.list, then run make setup again"
  # Without systemd, the packages' scripts would start the services through /etc/init.d; a
  # policy-rc.d answering 101 ("action forbidden") keeps them from starting during the install.
  local policy=/usr/sbin/policy-rc.d own_policy=""
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    own_policy=1
  fi
  local status=0
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null || status=$?
  [[ -z $own_policy ]] || "${sudo[@]}" rm -f "$policy"
  [[ $status -eq 0 ]] ||
    die "apt-get install ${missing[*]} failed (exit $status): run it by hand to see why, then make setup again"
  # Should a service have started anyway, stop it: statestream runs its own instances.
  for service in mosquitto influxdb; do
    if [[ -x /etc/init.d/$service ]]; then
      "${sudo[@]}" /etc/init.d/"$service" stop >/dev/null 2>&1 || true
    fi
  done
}

# java_jar NAME CLASSPATH WHAT: compiles jvm/NAME/src against CLASSPATH into
# .deps/jars/NAME/statestream-NAME.jar (skipped while the sources and the class path are unchanged).
java_jar() {
  local name=$1 classpath=$2 target=.deps/jars/$1 sources want classes
  mapfile -t sources < <(find "jvm/$name/src" -name '*.java' | sort)
  want=$(cat "${sources[@]}" <(echo "$classpath") | sha256sum | cut -c1-16)
  if up_to_date "$target/.src-hash" "$want"; then
    say "jar $target is up to date"
    return
  fi
  command -v javac >/dev/null 2>&1 ||
    die "javac is missing: install a JDK 17 (apt-get install openjdk-17-jdk-headless) and run make setup again"
  say "compiling jvm/$name into $target"
  classes=$(mktemp -d)
  javac --release 17 -nowarn -cp "$classpath" -d "$classes" "${sources[@]}" ||
    die "javac could not compile jvm/$name (see above)"
  mkdir -p "$target"
  jar cf "$target/statestream-$name.jar" -C "$classes" . ||
    die "jar could not package jvm/$name (see above)"
  rm -rf "$classes"
  echo "$want" >"$target/.src-hash"
}

pyspark_jars() {
  .venv/bin/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")'
}

# Hadoop's local file system without a shell command per file (jvm/local-fs), compiled against the
# Hadoop API jar that pyspark ships; Spark's checkpoints on local disk go through it.
local_fs_jar() {
  local api
  api=$(echo "$(pyspark_jars)"/hadoop-client-api-*.jar)
  [[ -f $api ]] || die "pyspark's hadoop-client-api jar is not in .venv: remove .venv and run make setup again"
  java_jar local-fs "$api"
}

# The exactly-once Kafka sink the Spark tasks write through (jvm/exactly-once; its Python side is
# the package statestream.exactly_once), compiled against
# pyspark's jars and the Kafka client the connector brought (.deps/jars/spark-kafka).
exactly_once_jar() {
  local kafka
  kafka=$(echo .deps/jars/spark-kafka/kafka-clients-*.jar)
  [[ -f $kafka ]] || die "the Kafka client jar is not in .deps/jars/spark-kafka: remove .deps and run make setup again"
  java_jar exactly-once "$(pyspark_jars)/*:$kafka"
}

# The charting and map libraries of the dashboard come from npm (versions pinned by
# package-lock.json) and are copied into the Python package, which serves them; the copies are not
# committed.
DASHBOARD_VENDOR=src/statestream/dashboard/static/vendor
DASHBOARD_FILES=(
  chart.js/dist/chart.umd.min.js
  chartjs-plugin-annotation/dist/chartjs-plugin-annotation.min.js
  leaflet/dist/leaflet.js
  leaflet/dist/leaflet.css
)

dashboard_assets() {
  local stamp=$DASHBOARD_VENDOR/.lock-hash want file
  want=$(hash_of dashboard-assets/package-lock.json)
  if up_to_date "$stamp" "$want"; then
    say "dashboard assets $DASHBOARD_VENDOR are up to date"
    return
  fi
  command -v npm >/dev/null 2>&1 ||
    die "npm is missing: install Node.js with npm (apt-get install nodejs npm) and run make setup again"
  say "installing the dashboard's charting and map libraries with npm ci into $DASHBOARD_VENDOR"
  (cd dashboard-assets && npm ci --no-audit --no-fund --loglevel=error) ||
    die "npm ci in dashboard-assets failed (see above): check that the npm registry is reachable, then run make setup again"
  mkdir -p "$DASHBOARD_VENDOR"
  for file in "${DASHBOARD_FILES[@]}"; do
    cp "dashboard-assets/node_modules/$file" "$DASHBOARD_VENDOR/"
  done
  echo "$want" >"$stamp"
}

# The join engine's loops and the pairs' JSON writer are compiled by numba on first import and
# cached beside their sources (statestream.precompile imports them all): done here once, not in
# the first job's workers.
engine_loops() {
  say "loading the join engine's compiled loops (compiled once, ~25 s, then cached)"
  .venv/bin/python -m statestream.precompile ||
    die "the join engine's loops did not compile (see above): remove .venv and run make setup again"
}

# The driver JVM's class archive (statestream.jobs.class_archive): a short Spark run whose
# loaded classes later drivers map instead of loading (a start ~5 s faster on two cores).
# Written again when Java or a jar on the driver's class path changes; optional: a failure is a
# warning and Spark starts without it.
class_archive() {
  .venv/bin/python -m statestream.jobs.class_archive_setup
}

system_packages
python_env
engine_loops
jvm_jars kafka-broker
jvm_jars spark-kafka
local_fs_jar
exactly_once_jar
dashboard_assets
class_archive
say "done"
