"""HTTP and TLS for the exporter tests: a plain request helper, a throwaway PKI (openssl),
client contexts."""

import http.client
import ssl
import subprocess

# A ClientHello's record header and the start of its handshake header: the server has
# something to read, and has to start a handshake that never completes.
PARTIAL_HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def get(port: int, path: str = "/metrics", headers: dict | None = None, method: str = "GET",
        body: bytes | None = None, context: ssl.SSLContext | None = None, timeout: float = 5):
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    else:
        conn = http.client.HTTPSConnection("localhost", port, timeout=timeout, context=context)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_cert(d, name: str, ca: str | None, san: str) -> None:
    """An EC P-256 key and certificate ``name``.crt; self-signed CA when ``ca`` is None."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-keyout", f"{name}.key", "-subj", f"/CN={name}"]
    if ca is None:
        _openssl("req", "-x509", *key, "-out", f"{name}.crt", "-days", "2", cwd=d)
        return
    (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
    _openssl("req", *key, "-out", f"{name}.csr", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.ext",
             cwd=d)


def client_context(pki, cert: str | None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    return ctx
