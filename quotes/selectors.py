"""Reads of quotes for the partner API."""

from django.core.exceptions import ObjectDoesNotExist

from config.core.modes import Principal

from . import errors
from .codec import decode_quote_id
from .models import Quote


def quote_get_for_partner(*, quote_id: str, principal: Principal) -> Quote:
    """The quote behind an encrypted id, if it is the caller's.

    An id that does not decrypt, names no quote, or names a quote of the other mode (docs/partners/test-mode.md "Test mode")
    is QUOTE_NOT_FOUND; another partner's quote of the same mode is FORBIDDEN (docs/partners/catalog-and-quotes.md "Quotes").
    """
    pk = decode_quote_id(quote_id)
    quote = None
    if pk is not None:
        quote = Quote.objects.select_related("event").filter(pk=pk, livemode=principal.livemode).first()
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
