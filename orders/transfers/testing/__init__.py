"""Testing: the transfer simulator (test mode's transfer platform and its DKIM signer), its e-mails, the
``simulate_transfer`` endpoint and the corpus report (``make transfer-corpus``)."""
