"""POST /v1/quotes and GET /v1/quotes/{quote_id}."""

import logging
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog.queries import quote_read_keys
from config.api.idempotency import META_KEY
from config.api.plain import Answer, json_body, plain_view, takes_json
from config.api.ratelimit import WriteIf
from config.api.routes import short_path
from config.api.schema import error_responses
from config.api.validation import ReusedValidator
from partners.authentication import (
    HasRequiredScope,
    PayoutConfigured,
    bearer_authenticate,
    payout_check,
    scope_check,
)
from partners.revocation import revocation_watch

from . import errors, examples, selectors, services
from .quote_cache import quote_store_commands
from .serializers import (
    QuoteCreateSerializer,
    QuoteDetailSerializer,
    QuoteSerializer,
    event_id_as_given,
    quote_body_valid,
    quote_data,
)

logger = logging.getLogger(__name__)
_quote_body = ReusedValidator(QuoteCreateSerializer)


class QuoteCreateView(APIView):
    required_scope = "quotes:write"
    permission_classes = [HasRequiredScope, PayoutConfigured]

    @extend_schema(
        operation_id="quotes_create",
        tags=["Quotes"],
        summary="Lock a price",
        description=(
            "Locks the row's current per-ticket offer for 15 minutes (900 s, `expires_at`). Omit "
            "`row_name` to get the best row: the highest offer with enough quantity. A quote reserves no "
            "quantity; the order does. Checks, in order: token, scope `quotes:write`, payout configured "
            "(403 PAYOUT_METHOD_NOT_CONFIGURED, `details.missing`), body (400 VALIDATION_ERROR), "
            "EVENT_NOT_FOUND, EVENT_EXPIRED (event started or canceled), SECTION_NOT_FOUND, ROW_NOT_FOUND, "
            "INSUFFICIENT_QUANTITY (`details: {requested, available}`)."
        ),
        request=QuoteCreateSerializer,
        responses={
            201: QuoteSerializer,
            **error_responses(
                errors.ValidationFailed,
                errors.Forbidden,
                errors.PayoutMethodNotConfigured,
                errors.EventNotFound,
                errors.SectionNotFound,
                errors.RowNotFound,
                errors.EventExpired,
                errors.InsufficientQuantity,
            ),
        },
        examples=[
            OpenApiExample("Named row", request_only=True, value=examples.QUOTE_REQUEST),
            OpenApiExample("Best row", request_only=True, value=examples.QUOTE_REQUEST_BEST_ROW),
            OpenApiExample("Quote", response_only=True, status_codes=["201"], value=examples.QUOTE),
        ],
    )
    def post(self, request):
        return Response(_quote_create(request.data, request.user), status=201)


def _quote_create(body, principal, *, found: dict | None = None) -> dict:
    """Validate the body (the serializer's errors; a body it would take as it is needs no serializer) and
    lock the price. ``found``: the versions of the body's event (:func:`event_id_as_given`, which is the
    validated event id) as the request's round trip read them (``None``: none read)."""
    data = quote_body_valid(body)
    if data is None:
        data = _quote_body.validate(body)
    quote = services.quote_create(
        found=found, partner_pk=principal.pk, livemode=principal.livemode, **_quote_asked(data)
    )
    return quote_data(quote, event_public_id=data["event_id"])


def _quote_asked(data: dict) -> dict:
    """The validated body as the quote services take it."""
    return {
        "event_id": data["event_id"],
        "section_name": data["section_name"],
        "row_name": data.get("row_name"),
        "quantity": data["quantity"],
        "user_metadata": dict(data.get("user_metadata") or {}),
    }


_quote_answer = Answer(QuoteCreateView)


def _takes(request) -> bool:
    # With a token and a JSON body; an Idempotency-Key is claimed by DRF's path (partners.idempotency.gate).
    return (
        bool(request.META.get("HTTP_AUTHORIZATION")) and META_KEY not in request.META and takes_json(request)
    )


def _answer(request):
    """POST /v1/quotes without DRF's dispatch, in its order of checks: the token and the rate budget, the
    scope, the payment set-up, the body, then the service. The body is parsed first so that the round trip
    that authenticates also reads the versions of the event it names (and, made ahead, stores the quote: see
    :class:`_Ahead`); a body that does not parse is refused at its turn."""
    ahead = None
    try:
        try:
            body, refused = json_body(request), None
        except Exception as exc:
            body, refused = None, exc
        event_id = event_id_as_given(body)
        read = quote_read_keys(event_id) if event_id is not None else []
        ahead = _Ahead(body, read) if read else None
        principal, claims, found = bearer_authenticate(
            request,
            request.META["HTTP_AUTHORIZATION"],
            read=read,
            write_if=ahead.prepare if ahead is not None else None,
        )
        request.user, request.auth = principal, claims  # as DRF's request leaves them on Django's
        scope_check(principal, QuoteCreateView.required_scope)
        payout_check(principal)
        if refused is not None:
            raise refused
        if ahead is not None:
            ahead.answered(principal, claims, found)
        if ahead is not None and ahead.written:
            services.quote_pending_counted(int(ahead.write_if.replies[1]))
            data = ahead.data
        else:
            data = _quote_create(body, principal, found=found if read else None)
    except Exception as exc:
        if ahead is not None and ahead.written:
            # Not expected: the bytes that made the write due are those of an answered request.
            logger.error("quote %s stored ahead for a request refused after the round trip", ahead.quote.pk)
        return _quote_answer.failed(exc, request)
    return _quote_answer.ok(data, request, status=201)


# What this web process last read in a quote's round trip, for quotes made ahead (:class:`_Ahead`); bounded,
# emptied when full. Never shared: another process learns the same from its own requests.
_MEMORY = 10_000
_accepted: dict[str, tuple[int, tuple[bytes, ...]]] = {}  # token session → (partner pk, its entries' bytes)
_versions: dict[str, tuple[bytes, Any]] = {}  # a version's key → its bytes and its value


def _remember(memory: dict, key: str, value) -> None:
    if len(memory) >= _MEMORY and key not in memory:
        memory.clear()
    memory[key] = value


class _Ahead:
    """A quote made before its round trip and stored in it, when that round trip finds what this process read
    in an earlier quote of the same token: the entries of the token's session (its state and the partner's
    payment readiness, as the round trip of a quote that was answered read them) and the catalog's and the
    event's versions, byte for byte (``config.api.ratelimit.WriteIf``). The authentication and the checks
    after it then decide on those same bytes: the request is answered as that earlier one was (a revocation,
    a suspension or a payment change replaces them first), and the quote is chosen among the section's rows
    this process holds under those versions, as :func:`services.quote_create` would choose it. So a warm quote
    makes one round trip, not two. When anything differs the round trip writes nothing and the quote is made
    after it, as without this.

    Bound: a round trip whose answer is lost after Redis ran it leaves its quote stored, unused; it expires
    as any quote (the quote made after it is another)."""

    def __init__(self, body, read: list[str]) -> None:
        self.body, self.read = body, read
        self.quote = None
        self.data: dict | None = None  # the quote's answer, made with it
        self.session_keys: list[str] = []
        self.write_if: WriteIf | None = None

    @property
    def written(self) -> bool:
        """The round trip stored the quote made ahead."""
        return self.write_if is not None and self.write_if.replies is not None

    def prepare(self, claims, keys: list[str]) -> WriteIf:
        self.write_if = WriteIf()
        self.session_keys = keys[: len(keys) - len(self.read)]
        try:
            self._make(claims)
        except Exception:  # the quote is then made after the round trip, as without this
            logger.exception("a quote could not be made ahead of its round trip")
            self.quote, self.data, self.write_if.expect, self.write_if.commands = None, None, [], []
        return self.write_if

    def _make(self, claims) -> None:
        accepted = _accepted.get(claims.session_id)
        known = [_versions.get(key) for key in self.read]
        if (
            accepted is None
            or None in known
            or len(accepted[1]) != len(self.session_keys)
            or QuoteCreateView.required_scope not in claims.scopes
            or revocation_watch.decides(
                claims.session_id,
                partner_id=claims.partner_id,
                livemode=claims.livemode,
                generation=claims.generation,
            )
        ):
            return
        data = quote_body_valid(self.body)
        if data is None:
            return
        self.quote = services.quote_ahead(
            found={key: value for key, (_raw, value) in zip(self.read, known, strict=True)},
            partner_pk=accepted[0],
            livemode=claims.livemode,
            **_quote_asked(data),
        )
        if self.quote is not None:
            self.data = quote_data(self.quote, event_public_id=data["event_id"])
            self.write_if.expect = [*accepted[1], *(raw for raw, _value in known)]
            self.write_if.commands = quote_store_commands(self.quote)

    def answered(self, principal, claims, found: dict | None) -> None:
        """The token, scope and payment checks passed on what the round trip read: remember it."""
        if self.write_if is None:
            return
        raw = self.write_if.raw
        for key in self.read:
            if key in raw:
                _remember(_versions, key, (raw[key], found[key]))
        session = principal.session
        # Only a decision the cache's entries made alone (no database read) is made again on the same bytes.
        if session is None or session.readiness_stamp is None or session.readiness is None:
            return
        if all(key in raw for key in self.session_keys):
            entries = tuple(raw[key] for key in self.session_keys)
            _remember(_accepted, claims.session_id, (principal.pk, entries))


quote_create_view = short_path(plain_view(QuoteCreateView.as_view(), _takes, _answer), ("POST",), body=True)


class QuoteDetailView(APIView):
    required_scope = "quotes:write"

    @extend_schema(
        operation_id="quotes_retrieve",
        tags=["Quotes"],
        summary="One of your quotes",
        description=(
            "The caller's quote with its `status`: `active`, `consumed` (then `order_id` names the order) "
            "or `expired`. Another partner's quote is 403 FORBIDDEN; an unknown, tampered or truncated "
            "id is 404 QUOTE_NOT_FOUND. Needs scope `quotes:write`."
        ),
        parameters=[
            OpenApiParameter(
                "quote_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Encrypted quote id."
            )
        ],
        responses={200: QuoteDetailSerializer, **error_responses(errors.Forbidden, errors.QuoteNotFound)},
        examples=[
            OpenApiExample("Active quote", response_only=True, value={**examples.QUOTE, "order_id": None}),
            OpenApiExample("Consumed quote", response_only=True, value=examples.QUOTE_CONSUMED),
        ],
    )
    def get(self, request, quote_id: str):
        quote = selectors.quote_get_for_partner(quote_id=quote_id, principal=request.user)
        # The id is echoed as sent: during a key rotation an id made with the previous key stays stable.
        data = quote_data(quote, event_public_id=quote.event.event_id, quote_id=quote_id, with_order=True)
        return Response(data)
