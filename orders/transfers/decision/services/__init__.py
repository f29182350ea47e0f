"""The decision stage's writes: the decision by kind under the order's lock (``decide``), the reminders and sweeps
the beat runs (``reminders``) and the raw mail's retention (``retention``). Every order's transfer state moves
through ``decision.state``; the processing that drives a message through every stage is above them all
(``orders.transfers.pipeline``)."""
