"""Decision: one message through every stage (``process``), what it does to its order (``decide``), and the one
writer of the transfer fields and cases (``state``), with the reminders, sweeps and retention
(docs/architecture.md "Transfer detection")."""
