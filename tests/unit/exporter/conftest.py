"""Fixtures of the exporter tests: started servers (stopped after the test) and a PKI."""

import pytest

from nicwatch.exporter.http import MetricsServer

from httpd import make_cert


@pytest.fixture
def server():
    started = []

    def start(host: str = "127.0.0.1", **kwargs) -> MetricsServer:
        s = MetricsServer(host, 0, **kwargs)
        s.start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    make_cert(d, "ca", None, "")
    make_cert(d, "rogue-ca", None, "")
    make_cert(d, "server", "ca", "DNS:localhost,IP:127.0.0.1")
    make_cert(d, "server2", "ca", "DNS:localhost,IP:127.0.0.1")
    make_cert(d, "scraper", "ca", "DNS:scraper.example")
    make_cert(d, "other", "ca", "DNS:other.example")
    make_cert(d, "rogue", "rogue-ca", "DNS:scraper.example")
    return d
