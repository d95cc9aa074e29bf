"""The sandbox's guard, after Jupyter's server security: a token, a Host allow-list, an Origin check, a body limit.

Every HTTP request passes :class:`Guard` (a pure ASGI middleware, so the event stream is not buffered) before the app:

1. **Host allow-list** (against DNS rebinding): the Host header must name this machine — ``localhost``, a loopback
   address, the bound host, or, with ``--allow-remote``, this machine's names and any IP literal (an IP cannot be
   rebound; a hostname can). Anything else is 403.
2. **Token**: the random token printed in the sandbox's URL, given as ``?token=``, as ``Authorization: token …``
   (scripts), or as the cookie that the first tokened page load sets (HttpOnly, SameSite=Strict, named for the port
   so that two sandboxes do not clash). Without it, 403 and a line saying where the token is.
3. **Origin check** (against cross-site request forgery), on every request that is not GET/HEAD whatever its content
   type: an ``Origin`` header, when present, must be this server's own; a request authenticated by the cookie alone
   must carry that Origin (or a same-origin Referer). Browsers always send Origin on cross-site POSTs, and a page of
   another site never holds the cookie (SameSite=Strict) nor the token.
4. **Body limit**: a declared ``Content-Length`` above ``max_body`` is refused before reading (413); a chunked body is
   counted as it streams and the answer replaced by 413 once it passes the limit.

5. **Concurrency limit**, applied only after the token: at most ``max_active`` requests of token holders in flight
   (more answer 503). A client without the token is answered 403 at once and holds no slot, so it cannot lock the
   user out (uvicorn's own ``limit_concurrency`` counted idle connections before any check; it is not used).

Responses also carry a strict ``Content-Security-Policy`` (scripts only from this server's files: no inline script,
no ``eval``; ``frame-ancestors 'none'``: no clickjacking), ``X-Content-Type-Options: nosniff``, ``X-Frame-Options:
DENY`` and ``Referrer-Policy: same-origin`` (the token never leaves in a Referer). The page renders whatever comes
from the run store (labels, errors, configs) as text, never as HTML: a planted run cannot script the page.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import socket
from collections.abc import Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 1 << 20
MAX_ACTIVE = 64  # requests of token holders in flight at once (event streams included); more answer 503
SAFE_METHODS = ("GET", "HEAD")
#: scripts only from this server's files (no inline script, no eval, no other site); Plotly sets inline styles and
#: draws its images as data: URLs; exports are downloaded from blob: URLs
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
       "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
       "frame-ancestors 'none'")
_HARDENING = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
              (b"content-security-policy", CSP.encode()), (b"referrer-policy", b"same-origin")]

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def new_token() -> str:
    """A fresh random token (192 bits, URL-safe), as Jupyter's."""
    return secrets.token_urlsafe(24)


def clip(text: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters: what any error of the sandbox may echo."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def allowed_hosts(bound: str, allow_remote: bool, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """Host names (lower case, no port) the Host header may carry."""
    names = {"localhost", "127.0.0.1", "::1", bound.lower().strip("[]"), *(e.lower() for e in extra if e)}
    if allow_remote:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(n for n in names if n)


def host_of(value: str) -> str:
    """The host name of a Host header or URL netloc, lower case, without port or IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """ASGI middleware enforcing the Host allow-list, the token, the Origin check and the body limit."""

    def __init__(self, app: Callable[..., Awaitable[None]], token: str, port: int, hosts: frozenset[str],
                 allow_remote: bool = False, max_body: int = MAX_BODY, max_active: int = MAX_ACTIVE) -> None:
        self.app, self.token, self.port, self.hosts = app, token, port, hosts
        self.allow_remote, self.max_body, self.max_active = allow_remote, max_body, max_active
        self.active = 0  # authenticated requests in flight (one event loop: no lock needed)
        self.cookie = f"attnlab-sandbox-{port}"

    def host_ok(self, host: str) -> bool:
        if host in self.hosts:
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return ip.is_loopback or self.allow_remote

    def origin_ok(self, origin: str) -> bool:
        parts = urlsplit(origin)
        try:
            port = parts.port or 80
        except ValueError:
            return False
        return parts.scheme == "http" and self.host_ok(host_of(parts.netloc)) and port == self.port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets here (server.Protocol answers an upgrade as plain HTTP: it never gets here)
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
        path, method = scope.get("path", "/"), scope["method"]
        refusal, via = self.check(headers, method, scope.get("query_string", b""))
        if refusal is not None:
            await self.refuse(send, path, *refusal)
            return
        length = headers.get("content-length", "")
        if length and (not length.isdigit() or int(length) > self.max_body):
            await self.refuse(send, path, 413, f"the request body is larger than {self.max_body} bytes"
                              if length.isdigit() else "bad Content-Length")
            return
        if self.active >= self.max_active:
            await self.refuse(send, path, 503, f"the sandbox is serving {self.active} requests; try again shortly")
            return
        self.active += 1
        try:
            await self.forward(scope, receive, send, path, via == "query")
        finally:
            self.active -= 1

    async def forward(self, scope: Scope, receive: Receive, send: Send, path: str, set_cookie: bool) -> None:
        """Call the app, counting the body as it streams (413 past the limit) and adding the response headers."""
        seen, too_large, replaced = 0, False, False

        async def counted() -> Message:
            nonlocal seen, too_large
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def sending(message: Message) -> None:
            nonlocal replaced
            if too_large or replaced:
                if not replaced:
                    replaced = True
                    await self.refuse(send, path, 413, f"the request body is larger than {self.max_body} bytes")
                return
            if message["type"] == "http.response.start":
                extra = list(_HARDENING)
                if set_cookie:
                    extra.append((b"set-cookie", f"{self.cookie}={self.token}; Path=/; HttpOnly; "
                                                 "SameSite=Strict".encode()))
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, counted, sending)

    def check(self, headers: dict[str, str], method: str, query: bytes) -> tuple[tuple[int, str] | None, str | None]:
        """``((status, why), None)`` for a refused request, else ``(None, how it was authenticated)``."""
        host = host_of(headers.get("host", ""))
        if not self.host_ok(host):
            return (403, f"Host {clip(host, 80)!r} is not allowed (this server answers to "
                         f"{', '.join(sorted(self.hosts))}); DNS rebinding?"), None
        via = self.authenticated(headers, query)
        if via is None:
            return (403, "this sandbox needs its token: open the URL that `attnlab sandbox` printed "
                         "(http://HOST:PORT/?token=...)"), None
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site")
            if origin is not None and not self.origin_ok(origin):
                return (403, f"cross-origin request refused (Origin {clip(origin, 80)!r})"), None
            if site in ("cross-site", "same-site"):
                return (403, f"cross-site request refused (Sec-Fetch-Site: {clip(site, 20)})"), None
            if via == "cookie" and origin is None and not self.origin_ok(headers.get("referer", "")):
                return (403, "a state-changing request from a browser must carry this page's Origin"), None
        return None, via

    def authenticated(self, headers: dict[str, str], query: bytes) -> str | None:
        """How the request shows the token: "header", "query", "cookie", or None."""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("token", "bearer") and self.matches(value.strip()):
            return "header"
        try:
            given = parse_qs(query.decode("latin-1"), max_num_fields=50).get("token", [])
        except ValueError:
            given = []
        if given and self.matches(given[0]):
            return "query"
        try:
            morsel = SimpleCookie(headers.get("cookie", "")).get(self.cookie)
        except CookieError:
            return None
        return "cookie" if morsel is not None and self.matches(morsel.value) else None

    def matches(self, given: str) -> bool:
        return secrets.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    async def refuse(self, send: Send, path: str, status: int, why: str) -> None:
        if path.startswith("/api/"):
            body, kind = json.dumps({"error": clip(why)}).encode(), b"application/json"
        else:
            body, kind = (clip(why) + "\n").encode(), b"text/plain; charset=utf-8"
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()), *_HARDENING]})
        await send({"type": "http.response.body", "body": body})
