"""``Idempotency-Key`` on the partner API's POSTs: the stored keys, their claim and replay (docs/partners/idempotency.md "Retries and Idempotency-Key")."""
