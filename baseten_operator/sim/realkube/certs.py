"""The control plane's key material: a CA, the API server's serving certificate, an admin
client certificate (group `system:masters`) and the service-account signing key pair.

Made fresh for every start, valid for a day, and written only into the control plane's own
working directory."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=1)
# The names a client may use for the API server: loopback, and the in-cluster names.
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
SERVING_IPS = ("127.0.0.1", "::1")


@dataclass(frozen=True)
class KeyMaterial:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    service_account_public: Path
    service_account_private: Path


def write_key_material(directory: Path) -> KeyMaterial:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("baseten-operator-test-ca")
    ca = _certificate(ca_name, ca_name, ca_key.public_key(), ca_key, is_ca=True)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    alternative_names: list[x509.GeneralName] = [x509.DNSName(name) for name in SERVING_DNS]
    alternative_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    serving = _certificate(
        _name("kube-apiserver"),
        ca_name,
        serving_key.public_key(),
        ca_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        alternative_names=alternative_names,
    )

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = _certificate(
        _name("admin", organization="system:masters"),
        ca_name,
        admin_key.public_key(),
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )

    # RS256, what every token reviewer and OIDC library accepts.
    service_account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    material = KeyMaterial(
        ca_cert=directory / "ca.crt",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        service_account_public=directory / "sa.pub",
        service_account_private=directory / "sa.key",
    )
    material.ca_cert.write_bytes(_pem(ca))
    material.serving_cert.write_bytes(_pem(serving))
    material.serving_key.write_bytes(_private_pem(serving_key))
    material.admin_cert.write_bytes(_pem(admin))
    material.admin_key.write_bytes(_private_pem(admin_key))
    material.service_account_private.write_bytes(_private_pem(service_account_key))
    material.service_account_public.write_bytes(
        service_account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return material


def _name(common_name: str, *, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _certificate(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    signing_key: ec.EllipticCurvePrivateKey,
    *,
    is_ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    alternative_names: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if alternative_names:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(alternative_names), critical=False
        )
    return builder.sign(signing_key, hashes.SHA256())


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _private_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
