"""Configuration files that once crashed or fooled nicwatch, each with the text of the
one-line error it must give now (tests/unit/test_config.py at start, tests/e2e/
test_lifecycle.py on SIGHUP)."""

# Every number a setting holds is bounded; what the issue found: NaN and infinity taken as
# an interval, an interval that overflowed a timer, a file that is not UTF-8 or nests
# without end, a "file" that never ends.
BAD_FILES = {
    "nan": (b"interval = nan\n", "key 'interval': expected a finite duration, got nan"),
    "inf": (b"interval = inf\n", "key 'interval': expected a finite duration, got inf"),
    "negative_inf": (b"[rates]\npeak_window = -inf\n", "key 'rates.peak_window'"),
    "huge_int": (b"interval = " + b"9" * 400 + b"\n", "key 'interval': must be between"),
    "below": (b'interval = "10ms"\n', "must be between 100ms and 1h, got '10ms'"),
    "above": (b'interval = "2h"\n', "must be between 100ms and 1h, got '2h'"),
    "window": (b'[history]\nwindow = "200h"\n', "key 'history.window': must be between 1s "
               "and 168h"),
    "bytes": (b'[history]\nmax_bytes = "1KiB"\n', "key 'history.max_bytes': must be between "
              "64KiB and 16GiB"),
    "names": (b"[collector]\nper_queue = [" + b'"x",' * 2000 + b"]\n", "at most 1024"),
    "nul": (b'[state]\nfile = "a\\u0000b"\n', "key 'state.file': expected a path"),
    "not_utf8": (b'interval = "5s"\n# caf\xe9\n', "not UTF-8 (byte 0xe9 at offset 21)"),
    "nested": (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    "too_large": (b"# " + b"x" * (1 << 20) + b"\n", "larger than 1 MiB"),
}
