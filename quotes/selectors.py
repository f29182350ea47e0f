"""Reads of quotes: for the partner API, and the quote an order is made of (``quote_for_order``)."""

from django.core.exceptions import ObjectDoesNotExist

from config.core.modes import Principal

from . import errors, queries
from .codec import QuoteClaims, decode_quote_claims
from .models import Quote
from .queries import QuoteToOrder
from .services import quote_unwritten


def quote_get_for_partner(*, quote_id: str, principal: Principal) -> Quote:
    """The quote behind an encrypted id, if it is the caller's: its row, or, for a quote whose row the batched
    writer has not written yet, Redis's copy or the quote rebuilt from its id (``quotes.services``).

    An id that does not decrypt, names no quote, or names a quote of the other mode (docs/partners/test-mode.md "Test mode")
    is QUOTE_NOT_FOUND; another partner's quote of the same mode is FORBIDDEN (docs/partners/catalog-and-quotes.md "Quotes").
    """
    claims = _claims(quote_id, partner_pk=principal.pk, livemode=principal.livemode)
    quote = None
    if isinstance(claims, QuoteClaims):
        # The id proves the quote's mode and partner; its row may still be on its way from Redis.
        quote = Quote.objects.select_related("event").filter(pk=claims.pk).first() or quote_unwritten(claims)
    elif claims is not None:
        quote = Quote.objects.select_related("event").filter(pk=claims, livemode=principal.livemode).first()
    if quote is None:
        raise errors.QuoteNotFound(details={"quote_id": quote_id})
    _owned(quote_id, owner_pk=quote.partner_id, partner_pk=principal.pk)
    return quote


def _claims(quote_id: str, *, partner_pk: int, livemode: bool) -> QuoteClaims | int | None:
    """What the id names (``quotes.codec.decode_quote_claims``); a self-contained id of the other mode is
    QUOTE_NOT_FOUND, and one of another partner FORBIDDEN."""
    claims = decode_quote_claims(quote_id)
    if isinstance(claims, QuoteClaims):
        if claims.livemode != livemode:
            raise errors.QuoteNotFound(details={"quote_id": quote_id})
        _owned(quote_id, owner_pk=claims.partner_pk, partner_pk=partner_pk)
    return claims


def _owned(quote_id: str, *, owner_pk: int, partner_pk: int) -> None:
    if owner_pk != partner_pk:
        raise errors.Forbidden("The quote belongs to another partner.", details={"quote_id": quote_id})


def quote_for_order(*, quote_id: str, partner_pk: int, livemode: bool) -> QuoteToOrder:
    """The quote an order of ``partner_pk`` in this mode is made of, with its event, in one query
    (``quotes.queries``); the quote still to be written when its row is not in the database yet (Redis's copy,
    or rebuilt from its id). QUOTE_NOT_FOUND or FORBIDDEN as for ``quote_get_for_partner``."""
    claims = _claims(quote_id, partner_pk=partner_pk, livemode=livemode)
    if isinstance(claims, QuoteClaims):
        found = queries.row_and_quote(quote_pk=claims.pk, row_pk=claims.row_pk)
        if found is None:  # its row is gone from the catalog
            raise errors.QuoteNotFound(details={"quote_id": quote_id})
        if found.quote is not None:
            return found.quote
        unwritten = quote_unwritten(claims, quoted=found.row)
        if unwritten is None:
            raise errors.QuoteNotFound(details={"quote_id": quote_id})
        return QuoteToOrder.of_unwritten(unwritten, event=found.event)
    quote = queries.quote_to_order(quote_pk=claims, livemode=livemode) if claims is not None else None
    if quote is None:
        raise errors.QuoteNotFound(details={"quote_id": quote_id})
    _owned(quote_id, owner_pk=quote.partner_pk, partner_pk=partner_pk)
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
