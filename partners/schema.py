"""OpenAPI description of the bearer-token authentication (drf-spectacular extension)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "partners.authentication.BearerTokenAuthentication"
    name = "BearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "base64url(payload).base64url(HMAC-SHA256 signature)",
            "description": (
                "Obtain a token at POST /v1/auth/token and send `Authorization: Bearer <access_token>`. "
                "Tokens last 3600 seconds; an expired token gets 401 TOKEN_EXPIRED."
            ),
        }
