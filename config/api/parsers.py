"""The JSON parser of every partner API view: a body that is present is a JSON object.

DRF's own parser returns whatever the JSON holds, and a view reading ``request.data or {}`` then takes
``null``, ``false``, ``0``, ``""`` or ``[]`` for no body at all (docs/partners/conventions.md "Strict
input"). An empty body (no bytes) is still no body: DRF does not call the parser for it.
"""

from rest_framework.parsers import JSONParser

from . import errors


class JSONObjectParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise errors.ValidationFailed(
                "The JSON body must be an object.", field="body", issue="invalid_type"
            )
        return data
