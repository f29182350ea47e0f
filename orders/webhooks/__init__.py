"""Webhook endpoints and their signed deliveries (docs/partners/notifications-and-webhooks.md "Webhooks").

A nested app of ``orders``: it subscribes to the order signals (``orders.signals``) and turns each
notification into one delivery per subscribed endpoint, sent by the ``webhooks`` Celery queue.
"""
