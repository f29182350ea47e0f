"""Reads of quotes for the partner API."""

from django.core.exceptions import ObjectDoesNotExist

from config.core.modes import Principal

from . import errors
from .codec import QuoteClaims, decode_quote_claims
from .models import Quote
from .services import quote_unwritten


def quote_get_for_partner(*, quote_id: str, principal: Principal) -> Quote:
    """The quote behind an encrypted id, if it is the caller's: its row, or, for a quote whose row the batched
    writer has not written yet, Redis's copy or the quote rebuilt from its id (``quotes.services``).

    An id that does not decrypt, names no quote, or names a quote of the other mode (docs/partners/test-mode.md "Test mode")
    is QUOTE_NOT_FOUND; another partner's quote of the same mode is FORBIDDEN (docs/partners/catalog-and-quotes.md "Quotes").
    """
    claims = decode_quote_claims(quote_id)
    quote = None
    if isinstance(claims, QuoteClaims):
        # The id proves the quote's mode and partner; its row may still be on its way from Redis.
        if claims.livemode != principal.livemode:
            raise errors.QuoteNotFound(details={"quote_id": quote_id})
        if claims.partner_pk != principal.pk:
            raise errors.Forbidden("The quote belongs to another partner.", details={"quote_id": quote_id})
        quote = Quote.objects.select_related("event").filter(pk=claims.pk).first() or quote_unwritten(claims)
    elif claims is not None:
        quote = Quote.objects.select_related("event").filter(pk=claims, livemode=principal.livemode).first()
    if quote is None:
        raise errors.QuoteNotFound(details={"quote_id": quote_id})
    if quote.partner_id != principal.pk:
        raise errors.Forbidden("The quote belongs to another partner.", details={"quote_id": quote_id})
    return quote


def quote_order_id(quote: Quote) -> str | None:
    """The public id of the order that consumed the quote, if the orders app links one."""
    if quote.consumed_at is None:
        return None
    try:
        order = quote.order
    except (AttributeError, ObjectDoesNotExist):
        return None
    return getattr(order, "order_id", None)
