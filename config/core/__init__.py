"""The shared mechanics every app uses, each implemented once: the state machine, ids and keys,
publishing tasks by name (at once or after commit, with a countdown), the backoff of every retry, templated
e-mail, batched deletes, the raw-SQL helper, the database retry, admin helpers (read-only pages, status
history), live/test mode, two-factor sign-in and the redaction of credentials from logged requests."""
