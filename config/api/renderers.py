from rest_framework.renderers import JSONRenderer

from .envelope import success_body


class EnvelopeJSONRenderer(JSONRenderer):
    """Wraps every successful DRF response in the envelope; error responses arrive already wrapped."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        renderer_context = renderer_context or {}
        response = renderer_context.get("response")
        if response is not None and not getattr(response, "enveloped", False):
            data = success_body(data, renderer_context.get("request"))
        return super().render(data, accepted_media_type, renderer_context)
