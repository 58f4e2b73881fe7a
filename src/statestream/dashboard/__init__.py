"""The live web dashboard: per thing, charts of speed, torque and power from Kafka, the power-level
distribution and duty cycle, alerts and pipeline health; recent history from InfluxDB on page open.
The fleet overview (`/fleet`, `FleetBoard`) lists every machine; the map (`/vehicles`,
`VehicleMap`) shows the vehicle cells and bunching alerts.

`statestream dashboard` serves it (`run_dashboard`); `create_app` builds the ASGI app.
"""

from statestream.dashboard.app import DashboardState, create_app, window_lengths_s
from statestream.dashboard.fleet import FleetBoard
from statestream.dashboard.history import History, load_history
from statestream.dashboard.hub import ClientHub
from statestream.dashboard.messages import RecordShaper, SeriesPoint, UnreadableRecord, WindowResult
from statestream.dashboard.policy import EXPIRY_GRACE_S, ResultBoard
from statestream.dashboard.server import check_can_serve, dashboard_url, run_dashboard
from statestream.dashboard.vehicle_map import VehicleMap

__all__ = [
    "EXPIRY_GRACE_S",
    "ClientHub",
    "DashboardState",
    "FleetBoard",
    "History",
    "RecordShaper",
    "ResultBoard",
    "SeriesPoint",
    "UnreadableRecord",
    "VehicleMap",
    "WindowResult",
    "check_can_serve",
    "create_app",
    "dashboard_url",
    "load_history",
    "run_dashboard",
    "window_lengths_s",
]
