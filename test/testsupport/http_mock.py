"""Canned HTTP answers for code that talks through runtime/http1.py's pools, with nothing
leaving the process.

`HttpMock` (a context manager) patches `Pool.request`, which every request goes through,
and answers each request from what a test registered for its method and
URL (the query aside; `match` adds conditions on it, the body or the headers):

    with HttpMock() as http:
        http.get("https://api.test/v1/models", json={"models": []})
        http.post(url, body=ReadTimedOut("slow"))

Several answers registered for one request are given in turn, the last one from then on
(as the `responses` library does for `requests`). A
request nothing was registered for fails like a refused connection. `calls` holds every
request with its answer; by default, leaving the block fails when an answer was never used.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from unittest import mock
from urllib.parse import parse_qsl, urlsplit

import urllib3

from baseten_operator.runtime.http1 import Answer, ConnectFailed, Headers, Pool


@dataclass
class SentRequest:
    method: str
    url: str
    headers: urllib3.HTTPHeaderDict
    body: bytes | None
    timeout: tuple[float | None, float | None]  # (connect, read)

    @property
    def path_url(self) -> str:
        """The path and query, as sent in the request line."""
        parts = urlsplit(self.url)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    @property
    def query(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.url).query, keep_blank_values=True))


Matcher = Callable[[SentRequest], bool]


class matchers:  # lowercase: read as a namespace, like `responses.matchers`
    """Conditions an answer may set on the request, besides its method and URL."""

    @staticmethod
    def query_param_matcher(params: Mapping[str, str]) -> Matcher:
        return lambda request: request.query == dict(params)

    @staticmethod
    def json_params_matcher(body: Any) -> Matcher:
        return lambda request: request.body is not None and jsonlib.loads(request.body) == body

    @staticmethod
    def header_matcher(headers: Mapping[str, str]) -> Matcher:
        return lambda request: all(request.headers.get(k) == v for k, v in headers.items())


@dataclass
class _Answer:
    method: str
    url: str
    status: int
    body: bytes | Exception
    headers: dict[str, str]
    match: Sequence[Matcher]
    used: int = 0

    def matches(self, request: SentRequest) -> bool:
        target = urlsplit(request.url)._replace(query="", fragment="").geturl()
        return (
            self.method == request.method
            and self.url == target
            and all(condition(request) for condition in self.match)
        )


@dataclass
class Call:
    request: SentRequest
    response: Answer | None


@dataclass
class HttpMock:
    assert_all_requests_are_fired: bool = True
    calls: list[Call] = field(default_factory=list)
    _answers: list[_Answer] = field(default_factory=list)
    _all: list[_Answer] = field(default_factory=list)

    # -- registering ----------------------------------------------------------------------

    def add(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        body: str | bytes | Exception = b"",
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
        match: Sequence[Matcher] = (),
    ) -> None:
        answer_headers = dict(headers or {})
        if json is not None:
            body = jsonlib.dumps(json)
            content_type = content_type or "application/json"
        if isinstance(body, str):
            body = body.encode()
        answer_headers.setdefault("Content-Type", content_type or "text/plain")
        answer = _Answer(method.upper(), url, status, body, answer_headers, match)
        self._answers.append(answer)
        self._all.append(answer)

    def get(self, url: str, **kwargs: Any) -> None:
        self.add("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> None:
        self.add("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> None:
        self.add("PUT", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> None:
        self.add("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> None:
        self.add("DELETE", url, **kwargs)

    # -- answering ------------------------------------------------------------------------

    def _answer(self, request: SentRequest) -> Answer:
        found = [answer for answer in self._answers if answer.matches(request)]
        if not found:
            self.calls.append(Call(request, None))
            raise ConnectFailed(
                f"Connection refused by HttpMock: nothing registered for "
                f"{request.method} {request.url}"
            )
        answer = found[0]
        if len(found) > 1:
            # Several answer this request: the first goes, after this request when it
            # never answered one, right away when it did (it has had its turn).
            self._answers.remove(answer)
            if answer.used:
                answer = found[1]
        answer.used += 1
        if isinstance(answer.body, Exception):
            self.calls.append(Call(request, None))
            raise answer.body
        response = Answer(
            answer.status,
            HTTPStatus(answer.status).phrase,
            Headers({name.lower(): value for name, value in answer.headers.items()}),
            answer.body,
        )
        self.calls.append(Call(request, response))
        return response

    def _request(
        self,
        pool: Pool,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> Answer:
        request = SentRequest(
            method.upper(),
            pool.origin + target,
            urllib3.HTTPHeaderDict(headers),
            body,
            (connect_timeout, read_timeout),
        )
        return self._answer(request)

    # -- the patch ------------------------------------------------------------------------

    def __enter__(self) -> HttpMock:
        self._patch = self._patched()
        self._patch.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._patch.__exit__(*exc_info)
        if exc_info[0] is None and self.assert_all_requests_are_fired:
            unused = [f"{a.method} {a.url}" for a in self._all if not a.used]
            assert not unused, f"answers never requested: {unused}"

    @contextmanager
    def _patched(self) -> Iterator[None]:
        owner = self

        def request(pool: Pool, method: str, target: str, **kwargs: Any) -> Answer:
            return owner._request(pool, method, target, **kwargs)

        with mock.patch.object(Pool, "request", request):
            yield
