"""Every write on payouts, one module per subdomain; import from the module that holds the function.

- ``methods``: payment methods (payout account, credit card) connected through the platform;
- ``charges``: the charge of the partner's card for an order;
- ``refunds``: the refund of that charge when the order is canceled (``refund_transition``);
- ``progression``: payouts to the partner and the order's walk along the payout path (``payout_transition``);
- ``order_reactions``: the reactions to order changes (confirm a new order, refund a canceled one);
- ``alerts``: e-mails to the partner about a declined charge, a failed refund or payout.

Every platform call goes through ``payouts.platform.get_platform()``.
"""
