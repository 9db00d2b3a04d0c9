"""The bit of S3 that boto3 uses to upload a truss: PUT object and multipart uploads."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qs

BUCKET = "sim-truss-uploads"
# Files larger than this are not kept as text (a truss may carry model weights).
MAX_KEPT_FILE_BYTES = 1 << 20


@dataclass
class S3Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def decode_aws_chunked(body: bytes) -> bytes:
    """Strip botocore's `aws-chunked` framing (`<hex size>[;ext]\\r\\n<data>\\r\\n`...)."""
    out = bytearray()
    pos = 0
    while pos < len(body):
        line_end = body.index(b"\r\n", pos)
        size = int(body[pos:line_end].split(b";", 1)[0], 16)
        pos = line_end + 2
        if size == 0:
            break
        out += body[pos : pos + size]
        pos += size + 2
    return bytes(out)


def unpack_truss(archive: bytes) -> dict[str, str]:
    """The text files of an uploaded truss archive (tar, maybe gzipped), by relative path."""
    files: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        for member in tar.getmembers():
            if not member.isfile() or member.size > MAX_KEPT_FILE_BYTES:
                continue
            extracted = tar.extractfile(member)
            if extracted is None:
                continue
            name = member.name.removeprefix("./")
            files[name] = extracted.read().decode("utf-8", errors="replace")
    return files


def _etag(data: bytes) -> str:
    return f'"{hashlib.md5(data, usedforsecurity=False).hexdigest()}"'


class S3Store:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, bytes] = {}
        self._multipart: dict[str, dict[int, bytes]] = {}

    def object(self, key: str) -> bytes | None:
        with self._lock:
            return self._objects.get(key)

    def reset(self) -> None:
        with self._lock:
            self._objects.clear()
            self._multipart.clear()

    def handle(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> S3Response:
        bucket, _, key = path.lstrip("/").partition("/")
        if not bucket or not key:
            return _error(400, "InvalidRequest", "bucket and key required")
        if "aws-chunked" in headers.get("content-encoding", ""):
            body = decode_aws_chunked(body)
        params = parse_qs(query, keep_blank_values=True)
        upload_id = (params.get("uploadId") or [""])[0]
        with self._lock:
            if method == "PUT" and "partNumber" in params:
                parts = self._multipart.get(upload_id)
                if parts is None:
                    return _error(404, "NoSuchUpload", upload_id)
                parts[int(params["partNumber"][0])] = body
                return S3Response(200, headers={"ETag": _etag(body)})
            if method == "PUT":
                self._objects[key] = body
                return S3Response(200, headers={"ETag": _etag(body)})
            if method == "POST" and "uploads" in params:
                new_id = uuid.uuid4().hex
                self._multipart[new_id] = {}
                return _xml(
                    "InitiateMultipartUploadResult",
                    f"<Bucket>{bucket}</Bucket><Key>{key}</Key><UploadId>{new_id}</UploadId>",
                )
            if method == "POST" and upload_id:
                parts = self._multipart.pop(upload_id, None)
                if parts is None:
                    return _error(404, "NoSuchUpload", upload_id)
                data = b"".join(parts[n] for n in sorted(parts))
                self._objects[key] = data
                return _xml(
                    "CompleteMultipartUploadResult",
                    f"<Bucket>{bucket}</Bucket><Key>{key}</Key><ETag>{_etag(data)}</ETag>",
                )
            if method == "DELETE" and upload_id:
                self._multipart.pop(upload_id, None)
                return S3Response(204)
        return _error(405, "MethodNotAllowed", f"{method} not supported")


def _xml(root: str, inner: str) -> S3Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?><{root}>{inner}</{root}>'.encode()
    return S3Response(200, body, {"Content-Type": "application/xml"})


def _error(status: int, code: str, message: str) -> S3Response:
    body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
    return S3Response(status, body, {"Content-Type": "application/xml"})
