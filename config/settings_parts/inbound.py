"""Transfer detection's settings (docs/operations.md "Transfer detection"): where the service receives the
sellers' transfer e-mails, which channels hand them over, and how long the evidence is kept."""

import environ

INBOUND_CHANNELS_ALL = ("smtp", "amazon_ses", "mailgun", "postmark")


def inbound_settings(env: environ.Env) -> dict:
    channels = tuple(c.strip() for c in env.list("INBOUND_CHANNELS", default=["smtp"]) if c.strip())
    unknown = sorted(set(channels) - set(INBOUND_CHANNELS_ALL))
    if unknown:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"INBOUND_CHANNELS: unknown channel(s) {', '.join(unknown)}; use {', '.join(INBOUND_CHANNELS_ALL)}"
        )
    return {
        # host:port the SMTP receiver (``manage.py inbound_smtp``) listens on.
        "INBOUND_SMTP_LISTEN": env.str("INBOUND_SMTP_LISTEN", default="127.0.0.1:2525"),
        "INBOUND_CHANNELS": channels,
        # ARC seals count only from these sealers' domains (e.g. a provider that forwards for the service).
        "INBOUND_TRUSTED_ARC_SEALERS": tuple(
            d.strip().lower() for d in env.list("INBOUND_TRUSTED_ARC_SEALERS", default=[]) if d.strip()
        ),
        "INBOUND_RAW_RETENTION_DAYS": env.int("INBOUND_RAW_RETENTION_DAYS", default=180),
        "TRANSFER_FILE_PAYOUT_HOLD_HOURS": env.int("TRANSFER_FILE_PAYOUT_HOLD_HOURS", default=48),
        # The largest message the receiver takes (SMTP SIZE), and the DNS bound of the DKIM key lookups.
        "INBOUND_MAX_BYTES": 10 * 1024 * 1024,
        "INBOUND_DNS_TIMEOUT_SECONDS": env.float("INBOUND_DNS_TIMEOUT_SECONDS", default=5.0),
        # Amazon SES's S3 action: the bucket the raw messages land in (the sweeper lists it).
        "INBOUND_SES_BUCKET": env.str("INBOUND_SES_BUCKET", default=""),
        "INBOUND_SES_PREFIX": env.str("INBOUND_SES_PREFIX", default=""),
        # Folders of further platform templates (``<primary_site>.yaml``), read after the shipped ones: a
        # platform whose real e-mails were captured is added here without changing the service's code.
        "TRANSFER_PLATFORM_DIRS": tuple(
            d.strip() for d in env.list("TRANSFER_PLATFORM_DIRS", default=[]) if d.strip()
        ),
    }
