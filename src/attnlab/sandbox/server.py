"""Start the sandbox: bind a socket (127.0.0.1 and a free port unless told otherwise), print the address, serve.

The printed address carries the session's random token (``?token=``; ``$ATTNLAB_SANDBOX_TOKEN`` sets a fixed one);
a host that is not loopback needs ``--allow-remote`` and is warned about; ``$ATTNLAB_SANDBOX_HOSTS`` (comma-separated)
adds names the Host header may carry, e.g. a reverse proxy's.

The socket is bound here and handed to uvicorn, so a free port (``port=0``) is taken without a race and the
printed address is the one being served. SIGINT/SIGTERM stop uvicorn, whose shutdown stops every training job
with SIGTERM (the runs are marked "interrupted" and resume when started again).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
import webbrowser
from pathlib import Path

from attnlab.core.config import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _resolve(host: str, port: int = 0) -> list[tuple]:
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r}: cannot resolve it ({exc.strerror})") from None


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free one."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: allowed 0..65535 (0 picks a free port)")
    infos = _resolve(host, port)
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def protocol() -> type:
    """uvicorn's HTTP/1.1 protocol (h11), with two changes for a server that speaks no websocket:

    - a connection that sends nothing is closed after uvicorn's keep-alive timeout (5 s), as an idle keep-alive
      connection is, instead of being held for ever;
    - an ``Upgrade`` request is answered as plain HTTP (the Guard refuses it without the token; with it, no route
      answers 404), logged at debug level instead of two warnings per attempt.

    No concurrency limit is set here: uvicorn's counts connections before any check, so idle connections of a
    client without the token would lock the user out. ``security.Guard`` limits token holders' requests instead."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)

        def _unsupported_upgrade_warning(self) -> None:
            self.logger.debug("upgrade request answered as plain HTTP (the sandbox has no websockets)")

    return Protocol


def serve(store_root: str | Path, *, host: str = "127.0.0.1", port: int = 0, max_jobs: int = 1, max_queued: int = 16,
          open_browser: bool = True, allow_remote: bool = False, log_level: str = "warning") -> None:
    """Serve the sandbox over the run store at ``store_root`` until interrupted (see ``security`` for its guard)."""
    from attnlab.sandbox import require

    require()
    import uvicorn

    from attnlab.core.registry import load_studies
    from attnlab.core.runs import RunStore
    from attnlab.sandbox.api import create_app
    from attnlab.sandbox.plugin import plugins
    from attnlab.sandbox.security import Guard, allowed_hosts, new_token

    if max_jobs < 1:
        raise ConfigError(f"--max-jobs {max_jobs}: must be ≥ 1")
    if max_queued < 0:
        raise ConfigError(f"--max-queued {max_queued}: must be ≥ 0")
    if not is_loopback(host) and not all(is_loopback(str(info[4][0])) for info in _resolve(host)):
        if not allow_remote:
            raise ConfigError(f"--host {host} is not a loopback address: anyone who reaches this machine could use "
                              "the sandbox; add --allow-remote to serve there anyway (its token still guards it)")
        print(f"warning: serving on {host}, not loopback (--allow-remote): anyone who can reach this machine and "
              "holds the token can start training runs and read the run store", file=sys.stderr, flush=True)
    token = os.environ.get("ATTNLAB_SANDBOX_TOKEN") or new_token()
    if len(token) < 16:
        raise ConfigError("ATTNLAB_SANDBOX_TOKEN must hold at least 16 characters")
    plugins()  # import errors of plug-ins surface here, before the port is announced
    load_studies()  # and the studies' experiments are registered before the first request asks for them
    app = create_app(RunStore(Path(store_root)), max_jobs=max_jobs, max_queued=max_queued)
    sock = bind(host, port)
    url = url_of(sock)
    extra = tuple(h.strip() for h in os.environ.get("ATTNLAB_SANDBOX_HOSTS", "").split(","))
    guard = Guard(app, token, sock.getsockname()[1], allowed_hosts(host, allow_remote, extra), allow_remote)
    server = uvicorn.Server(uvicorn.Config(guard, http=protocol(), log_level=log_level, timeout_graceful_shutdown=3,
                                           lifespan="on", access_log=False))  # the Guard limits token holders
    app.state.server = server
    print(f"attnlab sandbox on {url}?token={token} (run store {Path(store_root).resolve()}; Ctrl-C stops it)",
          flush=True)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(f"{url}?token={token}",)).start()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down for; that is this command's normal end
        pass
    finally:
        sock.close()
    print("attnlab sandbox stopped (its training jobs were stopped and resume when started again)", flush=True)
