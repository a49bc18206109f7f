"""Authentication: principals from configuration, proven by API keys or bearer JWTs.

A principal is an identity with a tenant and the actors it may act as. Every binding (JSON-RPC,
HTTP+JSON, the command surface, gRPC) asks one :class:`PrincipalAuthenticator` who a request
is; nothing in a request body ever names its caller.
"""

from accord.auth._authenticator import PrincipalAuthenticator, authenticate_metadata
from accord.auth._config import AuthConfig, JwtConfig, PrincipalSpec, parse_auth
from accord.auth._jwt import JwtVerifier

__all__ = [
    "AuthConfig",
    "JwtConfig",
    "JwtVerifier",
    "PrincipalAuthenticator",
    "PrincipalSpec",
    "authenticate_metadata",
    "parse_auth",
]
