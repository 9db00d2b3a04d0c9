"""A certificate and its key, in memory, as the file names `ssl` insists on loading from."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def pem_files(cert_pem: bytes, key_pem: bytes) -> Iterator[tuple[str, str]]:
    """Paths `ssl` can load the pair from, for the moment of loading.

    `ssl` loads certificates only from files. On Linux they are anonymous memory files
    (memfd), so the key never touches a disk and a read-only root filesystem is no obstacle;
    elsewhere (a developer's machine) a private temporary directory, removed at once.
    """
    if hasattr(os, "memfd_create"):
        descriptors = [os.memfd_create(name) for name in ("tls.crt", "tls.key")]
        try:
            for descriptor, pem in zip(descriptors, (cert_pem, key_pem), strict=True):
                os.write(descriptor, pem)
            cert_fd, key_fd = descriptors
            yield f"/proc/self/fd/{cert_fd}", f"/proc/self/fd/{key_fd}"
        finally:
            for descriptor in descriptors:
                os.close(descriptor)
        return
    with tempfile.TemporaryDirectory(prefix="tls-pair-") as directory:
        cert_file, key_file = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        cert_file.write_bytes(cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key_pem)
        yield str(cert_file), str(key_file)
