"""nicwatch: host-side NIC telemetry for RoCE/RDMA and high-speed Ethernet fabrics."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("nicwatch")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
