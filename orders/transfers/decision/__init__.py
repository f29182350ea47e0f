"""Decision: what a read message does to its order (``services.decide``), and the one writer of the transfer
progress and cases (``state``), with the reminders, sweeps and retention (docs/architecture/transfers.md "Transfer
detection")."""
