"""The `--web.config.file` of Prometheus' exporter-toolkit, so node_exporter users can reuse
the file they already have: TLS (with client certificates), bcrypt basic auth, security
headers and a request rate limit.

The file is parsed strictly like the toolkit does (an unknown key is an error) and every
problem is one line naming the file and the dotted key. Relative paths are relative to the
file's directory. ``load`` also builds the TLS context, so a certificate that does not load
or does not match its key is reported at start-up, not at the first scrape.

What nicwatch cannot do is refused rather than silently weakened:
``client_auth_type: RequireAnyClientCert`` (require a certificate without verifying it has
no equivalent in Python's ssl module) and ``curve_preferences`` (Python 3.11 cannot set a
group list). ``RequestClientCert`` asks for a certificate it never checks, so it behaves as
``NoClientCert``. ``http2`` is accepted and ignored: the endpoint speaks HTTP/1.1, so the
toolkit's rule that an HTTP/2 server list an AES-128-GCM suite does not apply. TLS 1.3
suite names in ``cipher_suites`` are accepted and, as in Go, have no effect.

``rate_limit.interval`` is read as yaml.v2 reads a Go ``time.Duration``: a string is a Go
duration (``1s``, ``1m30s``, ``100us``; see nicwatch.values.units), a bare number is nanoseconds,
and 0 disables the limit. ``burst: 0`` (or none) refuses every request, as it does there.

Run ``python -m nicwatch.exporter.webconfig FILE`` to check a file.
"""

from __future__ import annotations

import ipaddress
import math
import os
import ssl
import sys
import threading
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import structlog
import yaml

from nicwatch.values import ConfigError
from nicwatch.values.units import go_duration

log = structlog.get_logger("nicwatch.web")

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "RequestClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
# Go's configurable (TLS 1.0-1.2) cipher suite names -> OpenSSL names. TLS 1.3 suites are
# not configurable in Go either.
CIPHER_SUITES = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# TLS 1.3 suites: Go lists them in tls.CipherSuites() so the toolkit accepts them, but
# neither Go nor nicwatch lets them be configured; they are accepted and have no effect.
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256")
# The headers the toolkit lets `http_server_config.headers` set, with the values it allows
# (empty: any one-line value).
HEADER_VALUES: dict[str, tuple[str, ...]] = {
    "Content-Security-Policy": (), "Strict-Transport-Security": (),
    "X-Content-Type-Options": ("nosniff",), "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": ()}
HEADERS = tuple(HEADER_VALUES)
_TLS_KEYS = ("cert_file", "key_file", "cert", "key", "client_auth_type", "client_ca_file",
             "client_ca",
             "client_allowed_sans", "cipher_suites", "curve_preferences", "min_version",
             "max_version", "prefer_server_cipher_suites")
_TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")


class WebConfigError(ConfigError):
    """A bad web configuration file; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """``tls_server_config``; file paths are already resolved against the file's directory."""

    cert_file: str | None = None
    key_file: str | None = None
    cert: str | None = None  # inline PEM
    key: str | None = None
    client_auth_type: str = "NoClientCert"
    client_ca_file: str | None = None
    client_ca: str | None = None  # inline PEM
    client_allowed_sans: tuple[str, ...] = ()
    cipher_suites: tuple[str, ...] = ()
    min_version: str = "TLS12"
    max_version: str | None = None

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(f for f in (self.cert_file, self.key_file, self.client_ca_file) if f)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``rate_limit``: a token bucket for the whole server, one token per ``interval``."""

    interval: float
    burst: int


@dataclass(frozen=True, slots=True)
class WebConfig:
    path: str | None = None
    tls: TLSConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=lambda: MappingProxyType({}))
    headers: tuple[tuple[str, str], ...] = ()
    rate_limit: RateLimit | None = None
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False, repr=False)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file this configuration was built from (watched for changes)."""
        return ((self.path,) if self.path else ()) + (self.tls.files if self.tls else ())


def _fail(path: str, key: str, problem: str) -> WebConfigError:
    return WebConfigError(f"{path}: key {key!r}: {problem}")


def _mapping(path: str, key: str, value: Any,
             known: tuple[str, ...] | None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, key, f"expected a mapping, got {type(value).__name__}")
    for k in value:
        if not isinstance(k, str):
            raise _fail(path, key, f"keys must be strings, got {k!r}")
        if known is not None and k not in known:
            prefix = f"{key}." if key else ""
            raise WebConfigError(f"{path}: unknown key {prefix + k!r} (known: {', '.join(known)})")
    return value


def _string(path: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(path, key, f"expected a non-empty string, got {value!r}")
    return value


def _strings(path: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(path, key, f"expected a list of strings, got {value!r}")
    return tuple(_string(path, key, v) for v in value)


def _choice(path: str, key: str, value: Any, options: Collection[str]) -> str:
    if value not in options:
        raise _fail(path, key, f"expected one of {', '.join(options)}, got {value!r}")
    return str(value)


def _tls(path: str, raw: Any) -> TLSConfig | None:
    if raw is None:
        return None
    t = _mapping(path, "tls_server_config", raw, _TLS_KEYS)
    base = Path(path).parent

    def file(key: str) -> str | None:
        if t.get(key) is None:
            return None
        return str(base / _string(path, f"tls_server_config.{key}", t[key]))

    def inline(key: str) -> str | None:
        return None if t.get(key) is None else _string(path, f"tls_server_config.{key}", t[key])

    cert_file, key_file = file("cert_file"), file("key_file")
    cert, key = inline("cert"), inline("key")
    if not (cert_file or cert):
        raise _fail(path, "tls_server_config.cert_file", "missing (cert_file or cert is required)")
    if not (key_file or key):
        raise _fail(path, "tls_server_config.key_file", "missing (key_file or key is required)")
    if cert_file and cert:
        raise _fail(path, "tls_server_config.cert", "give cert_file or cert, not both")
    if key_file and key:
        raise _fail(path, "tls_server_config.key", "give key_file or key, not both")
    auth_type = t.get("client_auth_type") or "NoClientCert"
    if auth_type == "RequireAnyClientCert":
        raise _fail(path, "tls_server_config.client_auth_type", "RequireAnyClientCert (a "
                    "certificate that is never verified) is not supported; use "
                    "RequireAndVerifyClientCert")
    _choice(path, "tls_server_config.client_auth_type", auth_type, CLIENT_AUTH)
    ca_file, ca = file("client_ca_file"), inline("client_ca")
    if CLIENT_AUTH[auth_type] == ssl.CERT_REQUIRED and not (ca_file or ca):
        raise _fail(path, "tls_server_config.client_ca_file", f"required with client_auth_type "
                    f"{auth_type} (or client_ca)")
    if (ca_file or ca) and auth_type == "NoClientCert":  # the toolkit's rule too
        raise _fail(path, "tls_server_config.client_auth_type", "client CAs are configured "
                    "without a client auth policy (set VerifyClientCertIfGiven or "
                    "RequireAndVerifyClientCert)")
    sans = _strings(path, "tls_server_config.client_allowed_sans", t.get("client_allowed_sans"))
    if sans and CLIENT_AUTH[auth_type] != ssl.CERT_REQUIRED:
        raise _fail(path, "tls_server_config.client_allowed_sans", "needs client_auth_type "
                    "RequireAndVerifyClientCert")
    suites = _strings(path, "tls_server_config.cipher_suites", t.get("cipher_suites"))
    for s in suites:
        if s not in CIPHER_SUITES and s not in TLS13_SUITES:
            raise _fail(path, "tls_server_config.cipher_suites", f"unknown cipher suite {s!r}")
    if t.get("curve_preferences") is not None:
        raise _fail(path, "tls_server_config.curve_preferences", "not supported (Python's ssl "
                    "module cannot set a curve list); remove it")
    min_version = _choice(path, "tls_server_config.min_version",
                          t.get("min_version") or "TLS12", TLS_VERSIONS)
    max_version = t.get("max_version")
    if max_version is not None:
        _choice(path, "tls_server_config.max_version", max_version, TLS_VERSIONS)
        if TLS_VERSIONS[max_version] < TLS_VERSIONS[min_version]:
            raise _fail(path, "tls_server_config.max_version", f"{max_version} is below "
                        f"min_version {min_version}")
    prefer = t.get("prefer_server_cipher_suites")
    if prefer is not None and not isinstance(prefer, bool):
        raise _fail(path, "tls_server_config.prefer_server_cipher_suites",
                    f"expected true or false, got {prefer!r}")
    return TLSConfig(cert_file, key_file, cert, key, auth_type, ca_file, ca, sans,
                     tuple(s for s in suites if s in CIPHER_SUITES), min_version, max_version)


def _users(path: str, raw: Any) -> Mapping[str, bytes]:
    users = _mapping(path, "basic_auth_users", raw, None)
    out = {}
    for user, hashed in users.items():
        key = f"basic_auth_users.{user}"
        if ":" in user:
            raise _fail(path, key, "a user name cannot contain ':'")
        if not isinstance(hashed, str) or hashed[:4] not in ("$2a$", "$2b$", "$2y$") \
                or len(hashed) != 60:
            raise _fail(path, key, "expected a bcrypt hash ($2y$10$... as printed by "
                        "`htpasswd -nBC 10 \"\" | tr -d ':\\n'`)")
        out[user] = hashed.encode()
    return MappingProxyType(out)


def _headers(path: str, raw: Any) -> tuple[tuple[str, str], ...]:
    server = _mapping(path, "http_server_config", raw, ("http2", "headers"))
    if server.get("http2") is not None and not isinstance(server["http2"], bool):
        raise _fail(path, "http_server_config.http2", f"expected true or false, got "
                    f"{server['http2']!r}")
    headers = _mapping(path, "http_server_config.headers", server.get("headers"), HEADERS)
    out = []
    for name, value in headers.items():
        key = f"http_server_config.headers.{name}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # YAML reads `X-XSS-Protection: 1` as a number; Go as text
        if not isinstance(value, str) or any(c in value for c in "\r\n"):
            raise _fail(path, key, "expected a one-line string")
        if HEADER_VALUES[name] and value not in HEADER_VALUES[name]:
            raise _fail(path, key, f"expected one of {', '.join(HEADER_VALUES[name])}, got "
                        f"{value!r}")
        out.append((name, value))
    return tuple(out)


def _rate_limit(path: str, raw: Any) -> RateLimit | None:
    """``rate_limit`` read as the toolkit reads it (gopkg.in/yaml.v2 into a Go
    ``time.Duration``): a string is a Go duration (``1s``, ``1m30s``, ``100us``), a bare
    number is nanoseconds, and an absent, zero or negative interval disables the limit. An
    absent burst is 0, which (as with Go's rate.Limiter) refuses every request."""
    if raw is None:
        return None
    r = _mapping(path, "rate_limit", raw, ("interval", "burst"))
    interval = r.get("interval")
    try:
        if isinstance(interval, str):
            ns = go_duration(interval)
        elif interval is None or (isinstance(interval, (int, float))
                                  and not isinstance(interval, bool)
                                  and math.isfinite(interval)):
            ns = int(interval or 0)
        else:
            raise ValueError(f"expected a duration such as \"1s\" or \"100ms\", got "
                             f"{interval!r}")
    except ValueError as e:
        raise _fail(path, "rate_limit.interval", str(e)) from None
    burst = r.get("burst", 0)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
        raise _fail(path, "rate_limit.burst", f"expected a whole number of requests, got "
                    f"{burst!r}")
    if ns <= 0:
        return None
    if burst == 0:
        log.warning("web_config_rate_limit_refuses_all", file=path,
                    detail="rate_limit.burst is 0: every request is refused (429)")
    return RateLimit(ns / 1e9, burst)


def _load_chain(ctx: ssl.SSLContext, tls: TLSConfig) -> None:
    """Certificate chain and key, from files or inline PEM (through memory-only files)."""
    fds: list[int] = []
    try:
        def path_of(file: str | None, inline: str | None) -> str:
            if file or inline is None:  # one of them is set (load_web_config)
                return file or ""
            fd = os.memfd_create("nicwatch-tls")
            fds.append(fd)
            os.write(fd, inline.encode())
            return f"/proc/self/fd/{fd}"
        ctx.load_cert_chain(path_of(tls.cert_file, tls.cert), path_of(tls.key_file, tls.key))
    finally:
        for fd in fds:
            os.close(fd)


def build_ssl_context(path: str, tls: TLSConfig) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[tls.min_version]
    if tls.max_version:
        ctx.maximum_version = TLS_VERSIONS[tls.max_version]
    ctx.set_alpn_protocols(["http/1.1"])
    key = "tls_server_config.cert_file" if tls.cert_file else "tls_server_config.cert"
    try:
        _load_chain(ctx, tls)
    except OSError as e:
        raise _fail(path, key, f"cannot load certificate and key: {e.strerror or e}") from None
    except ssl.SSLError as e:
        raise _fail(path, key, f"cannot load certificate and key: {e.reason or e}") from None
    ctx.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca_file:
        try:
            ctx.load_verify_locations(cafile=tls.client_ca_file)
        except (OSError, ssl.SSLError) as e:
            raise _fail(path, "tls_server_config.client_ca_file",
                        f"cannot load {tls.client_ca_file}: {getattr(e, 'strerror', None) or e}"
                        ) from None
    elif tls.client_ca:
        try:
            ctx.load_verify_locations(cadata=tls.client_ca)
        except (ValueError, ssl.SSLError) as e:
            raise _fail(path, "tls_server_config.client_ca", f"cannot load: {e}") from None
    elif ctx.verify_mode != ssl.CERT_NONE:  # like Go: the system's roots
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    if tls.cipher_suites:
        try:
            ctx.set_ciphers(":".join(CIPHER_SUITES[s] for s in tls.cipher_suites))
        except ssl.SSLError:
            raise _fail(path, "tls_server_config.cipher_suites", "none of the listed suites is "
                        "available in this OpenSSL") from None
    return ctx


def load(path: str) -> WebConfig:
    """Parse, validate and build the web configuration in ``path``.

    A file no real configuration looks like is one line too: nesting deeper than Python's
    recursion allows (the YAML parser recurses per level) or an integer too long to convert
    (Python refuses more than 4,300 digits, in the parser and in the messages that quote
    a value)."""
    try:
        return _load(path)
    except RecursionError:
        raise WebConfigError(f"{path}: not a web config: nested too deeply") from None
    except ValueError as e:  # int_max_str_digits
        if "digits" not in str(e):
            raise
        raise WebConfigError(f"{path}: not a web config: an integer with more than "
                             f"{sys.get_int_max_str_digits()} digits") from None


def _load(path: str) -> WebConfig:
    try:
        with open(path, "rb") as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise WebConfigError(f"{path}: cannot read web config: {e.strerror}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise WebConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    top = _mapping(path, "", data, _TOP_KEYS)
    tls = _tls(path, top.get("tls_server_config"))
    return WebConfig(
        path=path,
        tls=tls,
        users=_users(path, top.get("basic_auth_users")),
        headers=_headers(path, top.get("http_server_config")),
        rate_limit=_rate_limit(path, top.get("rate_limit")),
        ssl_context=build_ssl_context(path, tls) if tls else None,
    )


def allowed_san(peercert: Mapping[str, Any] | None, allowed: tuple[str, ...]) -> bool:
    """Whether a verified client certificate carries one of the ``allowed`` SANs (DNS,
    e-mail, IP address or URI), as the toolkit's client_allowed_sans checks."""
    if not allowed:
        return True
    names = {value for kind, value in (peercert or {}).get("subjectAltName", ())}
    for name in list(names):
        try:
            names.add(str(ipaddress.ip_address(name.strip())))
        except ValueError:
            pass
    return any(a in names for a in allowed)


def weakened(old: WebConfig, new: WebConfig) -> list[str]:
    """What ``new`` gives up of the protection ``old`` gives (empty: nothing)."""
    lost = []
    if old.tls and not new.tls:
        lost.append("TLS")
    elif old.tls and new.tls:
        if CLIENT_AUTH[new.tls.client_auth_type] < CLIENT_AUTH[old.tls.client_auth_type]:
            lost.append(f"client certificates ({old.tls.client_auth_type} -> "
                        f"{new.tls.client_auth_type})")
        if old.tls.client_allowed_sans and not set(new.tls.client_allowed_sans) <= set(
                old.tls.client_allowed_sans):
            lost.append("client_allowed_sans restriction")
        if TLS_VERSIONS[new.tls.min_version] < TLS_VERSIONS[old.tls.min_version]:
            lost.append(f"min_version {old.tls.min_version}")
    if old.users and not new.users:
        lost.append("basic authentication")
    return lost


def _stamp(files: tuple[str, ...]) -> tuple[tuple[int, int, int] | None, ...]:
    out: list[tuple[int, int, int] | None] = []
    for f in files:
        try:
            st = os.stat(f)
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


class WebConfigWatcher:
    """The current web configuration, re-read when the file or a certificate, key or CA
    file it names changes (checked on use, at most once per ``check_every`` seconds), so
    renewed certificates are picked up without a restart.

    A reload never opens up by accident. A new version that is unreadable, deleted, not
    valid, or empty (what a truncated or half-written file looks like) is logged and the
    previous one stays in force. A valid version that gives up a protection (TLS, client
    certificate verification, allowed SANs, the minimum TLS version, basic auth) is only
    applied by an explicit ``reload(explicit=True)`` (SIGHUP); a change noticed on disk is
    logged as refused until then."""

    def __init__(self, path: str, check_every: float = 1.0) -> None:
        self._path = path
        self._check_every = check_every
        self._config = load(path)
        self._stamp = self._applied = _stamp(self._config.files)
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def current(self) -> WebConfig:
        now = time.monotonic()
        if now - self._checked < self._check_every:
            return self._config
        with self._lock:
            self._checked = now
            stamp = _stamp(self._config.files)
            if stamp != self._stamp:
                self._stamp = stamp
                self._reload(explicit=False)
            return self._config

    def reload(self, explicit: bool = True) -> WebConfig:
        """Re-read now if the files changed since the version in force (SIGHUP):
        ``explicit`` also applies a valid file that weakens security."""
        with self._lock:
            self._checked = time.monotonic()
            self._stamp = _stamp(self._config.files)
            if self._stamp != self._applied:
                self._reload(explicit)
            return self._config

    def _reload(self, explicit: bool) -> None:
        keep = "keeping the previous web configuration"
        try:
            if _empty(self._path):
                raise WebConfigError(f"{self._path}: empty (a truncated or half-written file?); "
                                     "a reload never turns TLS or authentication off that way")
            new = load(self._path)
        except WebConfigError as e:
            log.error("web_config_reload_failed", error=str(e), detail=keep)
            return
        except Exception as e:  # whatever the file holds, the server keeps serving
            log.error("web_config_reload_failed", error=f"{self._path}: {type(e).__name__}",
                      detail=keep)
            return
        lost = weakened(self._config, new)
        if lost and not explicit:
            log.error("web_config_reload_refused", file=self._path, would_turn_off=lost,
                      detail=f"{keep}; send SIGHUP to apply a file that does this on purpose")
            return
        self._config = new
        self._stamp = self._applied = _stamp(new.files)
        if lost:
            log.warning("web_config_reloaded", file=self._path, turned_off=lost)
        else:
            log.info("web_config_reloaded", file=self._path)


def _empty(path: str) -> bool:
    """Whether the file holds no YAML document at all (empty, blanks or comments only)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False  # load() reports it
    return all(not line.strip() or line.lstrip().startswith(b"#")
               for line in head.splitlines()) and len(head) < (1 << 16)


def main(argv: list[str] | None = None) -> int:
    """`python -m nicwatch.exporter.webconfig FILE`: check a web config file."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m nicwatch.exporter.webconfig FILE", file=sys.stderr)
        return 2
    try:
        config = load(args[0])
    except WebConfigError as e:
        print(f"nicwatch: error: {e}", file=sys.stderr)
        return 2
    print(f"{args[0]}: ok (tls: {'yes' if config.tls else 'no'}, basic auth users: "
          f"{len(config.users)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
