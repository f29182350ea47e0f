"""An order's life after its creation, driven from one place: its confirmation (claim, charge, move, the seller's
e-mail; ``confirmation``, ``seller_email``) and the reactions to its moves (the refund of a canceled order;
``reactions``).

``orders`` keeps the order itself (the model, its creation, its state machine and history, the e-mails'
rendering) and ``payouts`` the money (charges, payouts, refunds, the platform); this package, in the layer that
may import both, reads and locks the orders it works on and moves them only through the order's state machine.
"""
