"""`statestream chaos`: the whole pipeline under load while its parts are killed with -9.

`schedule` (when what is killed), `parts` (the child processes and the local services it kills
and starts again), `load` (the simulators: machines, and with `--vehicles` vehicles),
`workspace` (the run's own topics, database and checkpoints), `checks` and `vehicle_checks`
(nothing lost, nothing doubled), `report` (the options and what a run found) and `runner` (all
of it, in order).
"""

from statestream.chaos.checks import ChaosChecks
from statestream.chaos.report import ChaosOptions, ChaosReport
from statestream.chaos.runner import run_chaos
from statestream.chaos.schedule import COMPONENTS, SPARK_WORKER, Kill, components, kill_schedule

__all__ = [
    "COMPONENTS",
    "SPARK_WORKER",
    "ChaosChecks",
    "ChaosOptions",
    "ChaosReport",
    "Kill",
    "components",
    "kill_schedule",
    "run_chaos",
]
