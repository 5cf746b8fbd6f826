"""Parsers of text people paste: `ethtool -S` output (ethtool_text) and `rdma statistic show`
(rdma_text). Pure functions of a string; nothing here reads the kernel."""
