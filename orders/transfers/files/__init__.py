"""Ticket files as evidence: a pdf order's own PDF and the files attached to mail, checked and recorded
(docs/architecture/transfers.md "Transfer detection")."""
