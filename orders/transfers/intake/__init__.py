"""Intake: the doors transfer e-mail comes in by (the SMTP receiver, the providers' inbound webhooks) and the one
entry point they hand raw bytes to, ``services.message_receive`` (docs/architecture/transfers.md "Transfer detection")."""
