"""Stripe's HTTP API over urllib: form-encoded requests, the headers every call carries, and the answers
turned into a payload, ``StripeApiError`` (Stripe refused) or ``PlatformUnavailable`` (try again later)."""

from __future__ import annotations

import json
from typing import Any
from urllib import error as urlerror
from urllib import request as urlrequest
from urllib.parse import urlencode

from ..errors import PlatformError, PlatformUnavailable


class StripeApiError(PlatformError):
    """Stripe answered 4xx: ``type``/``code``/``decline_code`` as Stripe names them."""

    def __init__(self, message: str, *, status: int, error: dict[str, Any]) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.type = error.get("type", "")
        self.code = error.get("code", "")
        self.decline_code = error.get("decline_code", "")


def encode_params(params: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Stripe's form encoding: ``metadata[order_id]=…``, ``expand[]=…``, booleans as ``true``/``false``."""
    items: list[tuple[str, str]] = []
    for key, value in params.items():
        name = f"{prefix}[{key}]" if prefix else str(key)
        if value is None:
            continue
        if isinstance(value, dict):
            items.extend(encode_params(value, name))
        elif isinstance(value, list | tuple):
            for index, element in enumerate(value):
                if isinstance(element, dict):
                    items.extend(encode_params(element, f"{name}[{index}]"))
                else:
                    items.append((f"{name}[]", str(element)))
        elif isinstance(value, bool):
            items.append((name, "true" if value else "false"))
        else:
            items.append((name, str(value)))
    return items


def with_query(url: str, query: str) -> str:
    return url + ("&" if "?" in url else "?") + query


def stripe_request(
    method: str,
    url: str,
    *,
    params: dict[str, Any] | None,
    secret_key: str,
    api_version: str,
    timeout: float,
    idempotency_key: str | None = None,
    stripe_account: str | None = None,
) -> dict[str, Any]:
    """One call: the parsed JSON answer of a 2xx; Stripe's 4xx as ``StripeApiError``; a 5xx, 409 or 429, a
    timeout or no connection as ``PlatformUnavailable``. The caller has checked the URL's scheme."""
    body = urlencode(encode_params(params or {}))
    data = None
    if method == "GET":
        if body:
            url = with_query(url, body)
    else:
        data = body.encode()
    headers = {
        "Authorization": f"Bearer {secret_key}",
        "Stripe-Version": api_version,
        "Accept": "application/json",
        "User-Agent": "partner-service/1.0",
    }
    if data is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    if stripe_account:
        headers["Stripe-Account"] = stripe_account
    req = urlrequest.Request(url, data=data, method=method, headers=headers)  # noqa: S310 (scheme checked)
    try:
        with urlrequest.urlopen(req, timeout=timeout) as response:  # noqa: S310 (scheme checked)
            status, raw = response.status, response.read()
    except urlerror.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (urlerror.URLError, TimeoutError, OSError) as exc:
        raise PlatformUnavailable("Stripe could not be reached. Please try again in a few minutes.") from exc
    try:
        payload = json.loads(raw or b"{}")
    except ValueError:
        payload = {}
    if status >= 500 or status in (409, 429):
        # 409: the same idempotency key is still being processed; 429: rate limited. Both pass.
        raise PlatformUnavailable(f"Stripe is not answering right now (HTTP {status}). Please try again.")
    if status >= 400:
        err = payload.get("error")
        if isinstance(err, str):  # the Connect OAuth endpoints' shape
            err = {"type": "oauth_error", "code": err, "message": payload.get("error_description", err)}
        err = err if isinstance(err, dict) else {}
        raise StripeApiError(
            err.get("message") or f"Stripe refused the request (HTTP {status}).", status=status, error=err
        )
    return payload
