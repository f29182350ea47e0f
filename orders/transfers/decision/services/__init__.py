"""The decision stage's writes: processing a stored message (``process``: claim, authenticate, read, match), the
decision by kind under the order's lock (``decide``), the reminders and sweeps the beat runs (``reminders``) and
the raw mail's retention (``retention``). Every order's transfer state moves through ``decision.state``."""
