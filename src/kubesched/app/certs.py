"""Serving certificates for the embedded API server. client-go sends a bearer token only over
TLS, so the server generates, once per data directory, a CA (kept as ``ca.crt``, written into
the kubeconfig) and a serving certificate for 127.0.0.1, localhost and the listen address."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubesched.app.datadir import check_private, write_private
from kubesched.errors import InputError

VALID_DAYS = 365


def _write(path: Path, data: bytes) -> None:
    write_private(path, data)


def _names(host: str) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        ip = ipaddress.ip_address(host)
        if str(ip) != "127.0.0.1":
            names.append(x509.IPAddress(ip))
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    return names


def ensure_certs(data_dir: Path, host: str) -> tuple[Path, Path, Path]:
    """(ca.crt, server.crt, server.key) under ``data_dir``, created when missing or when the
    serving certificate does not name ``host``."""
    ca_crt, crt, key = data_dir / "ca.crt", data_dir / "server.crt", data_dir / "server.key"
    names = _names(host)
    if ca_crt.exists() and crt.exists() and key.exists():
        check_private(key, "serving key")
        try:
            cert = x509.load_pem_x509_certificate(crt.read_bytes())
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except (OSError, ValueError, x509.ExtensionNotFound) as exc:
            raise InputError(f"not a serving certificate kubesched made: {exc}", file=str(crt)) from None
        if all(n in san for n in names):
            return ca_crt, crt, key
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesched-apiserver")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(ca_crt, ca.public_bytes(serialization.Encoding.PEM))
    _write(crt, server.public_bytes(serialization.Encoding.PEM))
    _write(
        key,
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
    return ca_crt, crt, key


def server_context(crt: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        ctx.load_cert_chain(crt, key)
    except (OSError, ssl.SSLError) as exc:
        raise InputError(f"cannot load the serving certificate and key: {exc}", file=str(key)) from None
    return ctx
