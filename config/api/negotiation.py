from rest_framework.negotiation import DefaultContentNegotiation


class LenientContentNegotiation(DefaultContentNegotiation):
    """The API speaks JSON only: an unusual ``Accept`` header still gets the JSON envelope, never a 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Exception:
            return renderers[0], renderers[0].media_type
