"""The web config file against exporter-toolkit's own cases (tests/fixtures/webconfig, with
their provenance in its README): every file the toolkit accepts is accepted with the same
meaning, every file it refuses is refused with one line naming the key, except the few
deliberate, documented differences listed in DIFFERENT."""

from __future__ import annotations

import shutil
import ssl
import textwrap

import pytest

from nicwatch.exporter.webconfig import WebConfigError, load

from httpd import get, make_cert
from paths import FIXTURES as PATHS_FIXTURES

FIXTURES = PATHS_FIXTURES / "webconfig"

# Toolkit verdict "bad": the key our one-line error must name.
BAD = {
    "junk.bad.yml": "expected a mapping",
    "junk_key.bad.yml": "unknown key 'tls_server_config.cert_filse'",
    "certPath_empty.bad.yml": "tls_server_config.cert_file",
    "cert_empty.bad.yml": "tls_server_config.cert",
    "keyPath_empty.bad.yml": "tls_server_config.key_file",
    "key_empty.bad.yml": "tls_server_config.key",
    "certPath_keyPath_empty.bad.yml": "tls_server_config.cert_file",
    "certPath_invalid.bad.yml": "tls_server_config.cert_file': cannot load",
    "keyPath_invalid.bad.yml": "tls_server_config.cert_file': cannot load",
    "certPath_keyPath_invalid.bad.yml": "tls_server_config.cert_file': cannot load",
    "clientCA_without_policy.bad.yml": "without a client auth policy",
    "clientCAs_invalid.bad.yml": "tls_server_config.client_auth_type",
    "clientCAs_missing.bad.yml": "tls_server_config.client_ca_file': required",
    "user_list_invalid.bad.yml": "basic_auth_users.john': expected a bcrypt",
    "inventedCiphers.bad.yml": "unknown cipher suite",
    "inventedCurves.bad.yml": "tls_server_config.curve_preferences",
    "wrongTLSVersion.bad.yml": "tls_server_config.min_version': expected one of",
    "headers_content_type_options.bad.yml": "X-Content-Type-Options': expected one of nosniff",
    "headers_frame_options.bad.yml": "X-Frame-Options': expected one of deny, sameorigin",
    "headers_extra_header.bad.yml": "unknown key 'http_server_config.headers.Content-Type'",
}
GOOD = ("empty.yml", "headers.good.yml", "noAuth.good.yml", "requireandverifyclientcert.good.yml",
        "client_san.good.yaml", "allCiphers.good.yml", "someCiphers.good.yml",
        "someCiphers_noOrder.good.yml", "noHTTP2.good.yml", "tlsInline.good.yml",
        "users.good.yml", "users_noTLS.good.yml", "rate_limiter_nonblocking.yaml",
        "rate_limiter_one_second.yaml")
# Deliberate differences: file -> (nicwatch's verdict, the needle of its error or None).
DIFFERENT = {
    # Python's ssl cannot require a certificate without verifying it.
    "requireanyclientcert.good.yml": ("bad", "RequireAnyClientCert"),
    # Python 3.11's ssl cannot set a curve list.
    "allCurves.good.yml": ("bad", "tls_server_config.curve_preferences"),
    # nicwatch speaks HTTP/1.1 only: Go's HTTP/2 cipher requirement does not apply.
    "noHTTP2Cipher.bad.yml": ("good", None),
}


@pytest.fixture(scope="module")
def testdata(tmp_path_factory):
    """A directory holding every fixture beside the certificates they name."""
    d = tmp_path_factory.mktemp("webconfig")
    make_cert(d, "ca", None, "")
    make_cert(d, "server", "ca", "DNS:localhost,IP:127.0.0.1")
    make_cert(d, "client_selfsigned", None, "")
    make_cert(d, "client2_selfsigned", None, "")
    for name in ("client_selfsigned", "client2_selfsigned"):
        shutil.copy(d / f"{name}.crt", d / f"{name}.pem")
    for f in FIXTURES.iterdir():
        text = f.read_text()
        for pem in ("server.crt", "server.key"):
            text = text.replace("{" + pem + "}",
                                textwrap.indent((d / pem).read_text(), "    ").lstrip())
        (d / f.name).write_text(text)
    return d


def test_every_fixture_is_in_the_table():
    listed = set(BAD) | set(GOOD) | set(DIFFERENT)
    on_disk = {f.name for f in FIXTURES.iterdir() if f.suffix in (".yml", ".yaml")}
    assert listed == on_disk


@pytest.mark.parametrize("name", GOOD)
def test_toolkit_good_file_is_accepted(testdata, name):
    config = load(str(testdata / name))
    text = (testdata / name).read_text()
    assert (config.ssl_context is not None) == ("tls_server_config" in text)
    assert len(config.users) == text.count("$2y$")
    assert len(config.headers) == text.count("\n    ") * ("headers:" in text)


@pytest.mark.parametrize("name, needle", sorted(BAD.items()))
def test_toolkit_bad_file_is_refused_in_one_line(testdata, name, needle):
    with pytest.raises(WebConfigError) as e:
        load(str(testdata / name))
    message = str(e.value)
    assert needle in message and "\n" not in message and str(testdata / name) in message


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_documented_differences(testdata, name):
    verdict, needle = DIFFERENT[name]
    if verdict == "good":
        assert load(str(testdata / name)).ssl_context is not None
    else:
        with pytest.raises(WebConfigError, match=needle):
            load(str(testdata / name))


def test_headers_are_served_as_the_toolkit_reads_them(testdata):
    """`X-XSS-Protection: 1` is a number to YAML and the text "1" to Go."""
    headers = dict(load(str(testdata / "headers.good.yml")).headers)
    assert headers["X-XSS-Protection"] == "1"
    assert headers["X-Frame-Options"] == "deny"


@pytest.mark.parametrize("interval, seconds", [
    ("0", None),        # documented: 0 disables the limiter
    ("'0'", None),
    ("0s", None),
    ("", None),         # null: Go's zero value
    ("'1s'", 1.0),
    ("1m30s", 90.0),
    ("100us", 100e-6),
    ("100µs", 100e-6),
    ("1.5h", 5400.0),
    ("2h45m", 9900.0),
    ("1000000000", 1.0),  # a bare number is nanoseconds (yaml.v2 into time.Duration)
    ("-1s", None),        # Go's rate.Every of a negative interval: no limit
])
def test_rate_limit_interval_is_a_go_duration(tmp_path, interval, seconds):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"rate_limit:\n  interval: {interval}\n  burst: 3\n")
    limit = load(str(cfg)).rate_limit
    assert (limit and limit.interval) == (seconds and pytest.approx(seconds))


@pytest.mark.parametrize("interval", ["1d", "5 s", "1.5", "true", "[1s]", "s", "1e3s"])
def test_rate_limit_interval_refuses_what_go_refuses(tmp_path, interval):
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"rate_limit:\n  interval: {interval if interval != '1.5' else '1.5x'}\n")
    with pytest.raises(WebConfigError, match=r"rate_limit\.interval"):
        load(str(cfg))


def test_rate_limiter_cases_behave_as_in_the_toolkit(testdata):
    """nonblocking (interval 0): never limited; one_second with burst 0: every request
    answered 429 Too Many Requests, as the toolkit's test expects. Except the probes, on
    purpose (docs/failure-behaviour.md): /healthz is never limited here."""
    from nicwatch.exporter.http import Exposition, MetricsServer
    for name, want in (("rate_limiter_nonblocking.yaml", [200] * 5),
                       ("rate_limiter_one_second.yaml", [429] * 3)):
        server = MetricsServer("127.0.0.1", 0, web_config_file=str(testdata / name))
        server.start()
        server.publish(Exposition(lambda om: b"x 1\n"))
        try:
            assert [get(server.port, "/metrics")[0] for _ in want] == want, name
            assert [get(server.port, "/healthz")[0] for _ in want] == [200] * len(want)
        finally:
            server.stop()


def test_inline_client_ca_from_the_toolkit_docs(testdata, tmp_path):
    """docs/web-configuration.md: `client_ca` is the CA as PEM text, instead of a file."""
    ca = textwrap.indent((testdata / "client_selfsigned.pem").read_text(), "    ")
    cfg = tmp_path / "web.yml"
    cfg.write_text(f"tls_server_config:\n  cert_file: {testdata}/server.crt\n"
                   f"  key_file: {testdata}/server.key\n"
                   "  client_auth_type: RequireAndVerifyClientCert\n"
                   f"  client_ca: |\n{ca}")
    ctx = load(str(cfg)).ssl_context
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.cert_store_stats()["x509_ca"] == 1
