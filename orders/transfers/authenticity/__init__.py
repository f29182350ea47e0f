"""Authenticity: is a stored message the platform's own mail to the order's transfer address? DKIM, alignment,
required headers, replay, ARC and SPF, with the DNS they read (docs/architecture/transfers.md "Transfer detection")."""
