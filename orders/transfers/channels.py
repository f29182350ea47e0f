"""The e-mail providers' inbound webhooks (django-anymail's ``inbound`` signal): each hands the raw MIME to
``orders.transfers.intake.message_receive``."""
