"""fleetprof: query, capture and compare profiles of a fleetprof server from Python.

    import fleetprof
    fp = fleetprof.Client("http://127.0.0.1:7071")      # or $FLEETPROF_HTTP, $FLEETPROF_TOKEN
    pid = fp.upload("trace.json.gz", job="resnet")
    fp.kernels(pid).head()                              # a DataFrame (a list of dicts without pandas)

The transport is the standard library (urllib, json, ssl); pandas is optional. The interface
is in ../shared/DESIGN.md ("Python client"); docs/python.md in the repository explains it.
"""

from .capture import Capture
from .client import Client, RouteMissing, StatsReports, flame_table
from .errors import (CaptureFailed, Error, InvalidArgument, NotFound, PermissionDenied,
                     Unauthenticated, Unavailable)
from .frames import Rows, have_pandas, records
from .profile import Profile, human_ns

__version__ = "0.1.0"

__all__ = ["Client", "Capture", "Profile", "Rows", "StatsReports", "Error", "NotFound",
           "PermissionDenied", "Unauthenticated", "InvalidArgument", "Unavailable",
           "CaptureFailed", "RouteMissing", "records", "have_pandas", "human_ns", "flame_table"]
