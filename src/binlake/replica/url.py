"""Server URLs: mysql://user:password@host:port/?ssl_mode=VERIFY_CA&ssl_ca=ca.pem

The password may also come from an environment variable (BINLAKE_PASSWORD by default) or
a prompt; it is never logged or shown (repr and str mask it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
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
        parts = urlsplit(url)
        if parts.scheme not in ("mysql", "mariadb"):
            raise ConfigError(f"unsupported URL scheme {parts.scheme!r}",
                              hint="use mysql://user:password@host:port")
        if not parts.hostname:
            raise ConfigError("the URL names no host", hint="use mysql://user:password@host:port")
        try:
            port = parts.port or 3306
        except ValueError:
            raise ConfigError("the URL's port is not a number") from None
        password = unquote(parts.password) if parts.password is not None else os.environ.get(password_env)
        opts = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = set(opts) - _OPTIONS
        if unknown:
            raise ConfigError(f"unknown URL option(s): {', '.join(sorted(unknown))}",
                              hint=f"known: {', '.join(sorted(_OPTIONS))}")
        return cls(parts.hostname, port, unquote(parts.username or "root"), password, opts)

    def with_password(self, password: str | None) -> "ServerURL":
        return ServerURL(self.host, self.port, self.user, password, dict(self.options))

    def connect_kwargs(self) -> dict:
        kw: dict = {k: v for k, v in self.options.items() if k in ("ssl_mode", "ssl_ca", "ssl_cert",
                                                                  "ssl_key", "server_public_key_path")}
        if "allow_public_key_retrieval" in self.options:
            kw["allow_public_key_retrieval"] = self.options["allow_public_key_retrieval"].lower() in ("1", "true", "yes")
        if "connect_timeout" in self.options:
            kw["connect_timeout"] = float(self.options["connect_timeout"])
        return kw

    def __str__(self) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}"
