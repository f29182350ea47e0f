"""The shared mechanics every app uses, each implemented once: the state machine, ids and keys,
publishing tasks after commit, the raw-SQL helper, the database retry, admin helpers, live/test mode and
two-factor sign-in."""
