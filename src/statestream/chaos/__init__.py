"""`statestream chaos`: the whole pipeline under load while its parts are killed with -9.

`schedule` (when what is killed), `parts` (the child processes and the local services it kills
and starts again), `load` (the simulator), `workspace` (the run's own topics, database and
checkpoints), `checks` (nothing lost, nothing doubled) and `runner` (all of it, in order).
"""

from statestream.chaos.checks import ChaosChecks
from statestream.chaos.runner import ChaosOptions, ChaosReport, run_chaos
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
