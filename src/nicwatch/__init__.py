"""nicwatch: host-side NIC telemetry for RoCE/RDMA and high-speed Ethernet fabrics."""

# The one place the version is written: pyproject.toml reads it from here (setuptools'
# dynamic version), so no command pays for importlib.metadata (a third of `nicwatch --help`).
__version__ = "0.1.0"
