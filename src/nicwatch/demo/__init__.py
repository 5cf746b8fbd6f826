"""The simulated host behind `nicwatch demo`."""
