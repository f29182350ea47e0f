"""Every write on payouts, one module per subdomain; import from the module that holds the function.

- ``methods``: payment methods (payout account, credit card) connected through the platform;
- ``charges``: the charge of the partner's card for an order;
- ``refunds``: the refund of that charge when the order is canceled (``refund_transition``);
- ``progression``: payouts to the partner and the order's walk along the payout path (``payout_transition``);
- ``alerts``: e-mails to the partner about a declined charge, a failed refund or payout, a disputed charge;
- ``platform_events``: the payment platform's events (Stripe's), stored once and acted on through the above;
- ``disputes``: the staff cases of disputed card charges.

The order's life after its creation (its confirmation, the reactions to its moves) is driven from
``payouts.lifecycle``, which calls these. Every platform call goes through ``payouts.platform.get_platform()``.
"""
