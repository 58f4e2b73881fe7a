#!/usr/bin/env bash
# `make test`: start the local services, run the whole pytest suite, and stop the services again
# only when this run started them (a developer's running services are left running).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
statestream=.venv/bin/statestream

started_here=""
if ! "$statestream" services status >/dev/null 2>&1; then
  started_here=1
fi
stop_if_started_here() {
  if [[ -n $started_here ]]; then
    echo "test: stopping the services this run started"
    "$statestream" services down >/dev/null || echo "test: 'statestream services down' failed" >&2
  fi
}
trap stop_if_started_here EXIT

"$statestream" services up || exit $?
.venv/bin/python -m pytest --durations=60 "$@"  # the slowest tests: keep the suite under 20 min
status=$?
if [[ $status -eq 5 ]]; then
  echo "test: pytest ran no test, which fails the run (a suite that ran nothing proves nothing)" >&2
fi
exit $status
