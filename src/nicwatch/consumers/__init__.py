"""Consumers of each poll's Samples: checks, identity, history, softirq load."""
