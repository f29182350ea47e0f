"""The partner portal (``/portal/``): server-rendered pages for a partner's own people.

Each app keeps its own pages (``portal.py`` or a ``portal/`` package, ``forms.py``, ``portal_urls.py``):
orders the orders pages, payouts the payouts, payment-method and statement pages and the portal's home,
partners (here) sign-in, two-factor sign-in, API credentials and preferences, and what every page shares:
``access`` (sign-in, partner scoping, security headers, time zone) and ``exports`` (streamed CSV).
``config/urls.py`` mounts them together under ``/portal/`` in the ``portal`` URL namespace.

Every page is scoped to the signed-in user's partner (``request.partner``): another partner's order or
payout is as unknown as a missing one. Times are shown in the partner's time zone (Settings · Preferences).
Every successful POST answers with a redirect to a GET.
"""
