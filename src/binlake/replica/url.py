"""Server URLs: mysql://user:password@host:port/?ssl_mode=VERIFY_CA&ssl_ca=ca.pem

The password may also come from an environment variable (BINLAKE_PASSWORD by default) or
a prompt; it is never logged or shown (repr and str mask it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import ConfigError

_OPTIONS = {"ssl_mode", "ssl_ca", "ssl_cert", "ssl_key", "server_public_key_path",
            "allow_public_key_retrieval", "connect_timeout"}


@dataclass(frozen=True)
class ServerURL:
    host: str
    port: int = 3306
    user: str = "root"
    password: str | None = field(default=None, repr=False)
    options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str, *, password_env: str = "BINLAKE_PASSWORD") -> "ServerURL":
        """The URL's parts; ConfigError names the URL (its password masked) and the fault."""
        shown = masked(url)
        form = "use mysql://user:password@host:port"
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # e.g. an unclosed '[' of an IPv6 address
            raise ConfigError(f"malformed server URL {shown}: {exc}",
                              hint=form + ", an IPv6 host in brackets: mysql://user@[::1]:3306"
                              ) from None
        if parts.scheme not in ("mysql", "mariadb"):
            raise ConfigError(f"unsupported URL scheme {parts.scheme!r} in {shown}", hint=form)
        if not parts.hostname:
            raise ConfigError(f"the URL {shown} names no host", hint=form)
        try:
            port = parts.port or 3306
        except ValueError:
            raise ConfigError(f"the port of {shown} is not a number from 1 to 65535",
                              hint=form) from None
        password = unquote(parts.password) if parts.password is not None else os.environ.get(password_env)
        opts = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(opts) - _OPTIONS
        if unknown:
            raise ConfigError(f"unknown URL option(s): {', '.join(sorted(unknown))}",
                              hint=f"known: {', '.join(sorted(_OPTIONS))}")
        if "connect_timeout" in opts:
            try:
                if not float(opts["connect_timeout"]) > 0:
                    raise ValueError
            except ValueError:
                raise ConfigError(f"URL option connect_timeout={opts['connect_timeout']!r} is not "
                                  "a positive number of seconds") from None
        return cls(parts.hostname, port, unquote(parts.username or "root"), password, opts)

    def with_password(self, password: str | None) -> "ServerURL":
        return ServerURL(self.host, self.port, self.user, password, dict(self.options))

    def connect_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {k: v for k, v in self.options.items() if k in ("ssl_mode", "ssl_ca", "ssl_cert",
                                                                  "ssl_key", "server_public_key_path")}
        if "allow_public_key_retrieval" in self.options:
            kw["allow_public_key_retrieval"] = self.options["allow_public_key_retrieval"].lower() in ("1", "true", "yes")
        if "connect_timeout" in self.options:
            kw["connect_timeout"] = float(self.options["connect_timeout"])
        return kw

    def __str__(self) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}"


def masked(url: str) -> str:
    """The URL as typed, with any password replaced by '***' (for messages)."""
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    auth, at, host = rest.rpartition("@")
    if not at or ":" not in auth:
        return url
    return f"{head}://{auth.split(':', 1)[0]}:***@{host}"
