"""``Idempotency-Key`` on the partner API's POSTs: the stored keys, their claim and replay (README "Retries and Idempotency-Key")."""
