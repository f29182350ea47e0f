from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api.validation import JSONBodySerializer


@extend_schema_field({"type": "string", "enum": ["client_credentials"]})
class GrantTypeField(serializers.CharField):
    """Any other grant type is 400 UNSUPPORTED_GRANT_TYPE (OAuth 2.0's own error), not VALIDATION_ERROR: the
    token endpoint judges it after the field checks, so the schema names the one value as an enum."""


class ClientCredentialsSerializer(JSONBodySerializer):
    client_id = serializers.CharField(max_length=100, help_text="Partner client id (`cli_…`).")
    client_secret = serializers.CharField(max_length=200, help_text="Partner client secret (`sec_…`).")
    grant_type = GrantTypeField(max_length=50, help_text="Must be `client_credentials`.")


class AccessTokenSerializer(serializers.Serializer):
    access_token = serializers.CharField(
        help_text="Bearer token: send as `Authorization: Bearer <access_token>`."
    )
    token_type = serializers.CharField(help_text="Always `Bearer`.")
    expires_at = serializers.DateTimeField(help_text="Expiry instant, UTC ISO 8601.")
    expires_in = serializers.IntegerField(help_text="Seconds to expiry (3600).")
    scope = serializers.CharField(
        help_text="Space-separated scopes: `events:read quotes:write orders:write webhooks:write`."
    )
