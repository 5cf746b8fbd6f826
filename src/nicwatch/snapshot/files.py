"""Snapshot files (docs/snapshots.md), in five modules: records.py (the records and how
they are built from Samples), state.py (the state part and its key), codec.py (writing:
encoding, atomic files, series), decode.py (reading: bounded, validated) and diff.py (the
difference between two snapshots). This module offers all of them under one name, for the
callers that use several (``from nicwatch.snapshot import files as S``)."""

from __future__ import annotations

from nicwatch.snapshot.codec import (
    NameTable as NameTable,
)
from nicwatch.snapshot.codec import (
    SeriesWriter as SeriesWriter,
)
from nicwatch.snapshot.codec import (
    encode as encode,
)
from nicwatch.snapshot.codec import (
    encode_interface as encode_interface,
)
from nicwatch.snapshot.codec import (
    encode_poll as encode_poll,
)
from nicwatch.snapshot.codec import (
    encode_stream as encode_stream,
)
from nicwatch.snapshot.codec import (
    save as save,
)
from nicwatch.snapshot.codec import (
    wants_gzip as wants_gzip,
)
from nicwatch.snapshot.codec import (
    write_atomic as write_atomic,
)
from nicwatch.snapshot.decode import (
    MAX_SNAPSHOT_BYTES as MAX_SNAPSHOT_BYTES,
)
from nicwatch.snapshot.decode import (
    MAX_TIME as MAX_TIME,
)
from nicwatch.snapshot.decode import (
    SnapshotTooLarge as SnapshotTooLarge,
)
from nicwatch.snapshot.decode import (
    decode as decode,
)
from nicwatch.snapshot.decode import (
    gunzip as gunzip,
)
from nicwatch.snapshot.decode import (
    load as load,
)
from nicwatch.snapshot.decode import (
    read_bounded as read_bounded,
)
from nicwatch.snapshot.diff import (
    MIN_DIFF_SECONDS as MIN_DIFF_SECONDS,
)
from nicwatch.snapshot.diff import (
    Change as Change,
)
from nicwatch.snapshot.diff import (
    Diff as Diff,
)
from nicwatch.snapshot.diff import (
    InterfaceDiff as InterfaceDiff,
)
from nicwatch.snapshot.diff import (
    diff as diff,
)
from nicwatch.snapshot.diff import (
    diff_interfaces as diff_interfaces,
)
from nicwatch.snapshot.diff import (
    family_total as family_total,
)
from nicwatch.snapshot.diff import (
    same_boot as same_boot,
)
from nicwatch.snapshot.diff import (
    when as when,
)
from nicwatch.snapshot.records import (
    COMPRESS_ABOVE as COMPRESS_ABOVE,
)
from nicwatch.snapshot.records import (
    ETHTOOL as ETHTOOL,
)
from nicwatch.snapshot.records import (
    ETHTOOL_NETLINK as ETHTOOL_NETLINK,
)
from nicwatch.snapshot.records import (
    FORMAT as FORMAT,
)
from nicwatch.snapshot.records import (
    GZIP_MAGIC as GZIP_MAGIC,
)
from nicwatch.snapshot.records import (
    IDENTITY_FIELDS as IDENTITY_FIELDS,
)
from nicwatch.snapshot.records import (
    INFINIBAND as INFINIBAND,
)
from nicwatch.snapshot.records import (
    LABEL_MAX as LABEL_MAX,
)
from nicwatch.snapshot.records import (
    NETDEV as NETDEV,
)
from nicwatch.snapshot.records import (
    VERSION as VERSION,
)
from nicwatch.snapshot.records import (
    DiffError as DiffError,
)
from nicwatch.snapshot.records import (
    InterfaceSnapshot as InterfaceSnapshot,
)
from nicwatch.snapshot.records import (
    Poll as Poll,
)
from nicwatch.snapshot.records import (
    Snapshot as Snapshot,
)
from nicwatch.snapshot.records import (
    SnapshotError as SnapshotError,
)
from nicwatch.snapshot.records import (
    build as build,
)
from nicwatch.snapshot.records import (
    check_label as check_label,
)
from nicwatch.snapshot.records import (
    interface_snapshot as interface_snapshot,
)
from nicwatch.snapshot.records import (
    poll_of as poll_of,
)
from nicwatch.snapshot.records import (
    raw_stat_sets as raw_stat_sets,
)
from nicwatch.snapshot.records import (
    snapshot_series as snapshot_series,
)
from nicwatch.snapshot.rows import (
    GONE as GONE,
)
from nicwatch.snapshot.rows import (
    HEALTH_FIRST as HEALTH_FIRST,
)
from nicwatch.snapshot.rows import (
    NEW as NEW,
)
from nicwatch.snapshot.rows import (
    OK as OK,
)
from nicwatch.snapshot.rows import (
    SOURCE_CHANGED as SOURCE_CHANGED,
)
from nicwatch.snapshot.rows import (
    Row as Row,
)
from nicwatch.snapshot.statekey import (
    jsonable as jsonable,
)
from nicwatch.snapshot.statekey import (
    reading_state as reading_state,
)
from nicwatch.snapshot.statekey import (
    state_key as state_key,
)
