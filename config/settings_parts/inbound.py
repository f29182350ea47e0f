"""Transfer detection's settings (docs/operations/receiving-mail.md "Transfer detection"): where the service receives the
sellers' transfer e-mails, which channels hand them over, and how long the evidence is kept."""

import ipaddress

import environ
from django.core.exceptions import ImproperlyConfigured

from config.settings_parts.environment import env

INBOUND_CHANNELS_ALL = ("smtp", "amazon_ses", "mailgun", "postmark")

# host:port the SMTP receiver (``manage.py inbound_smtp``) listens on.
INBOUND_SMTP_LISTEN = env.str("INBOUND_SMTP_LISTEN", default="127.0.0.1:2525")
INBOUND_CHANNELS = tuple(c.strip() for c in env.list("INBOUND_CHANNELS", default=["smtp"]) if c.strip())
if unknown := sorted(set(INBOUND_CHANNELS) - set(INBOUND_CHANNELS_ALL)):
    raise ImproperlyConfigured(
        f"INBOUND_CHANNELS: unknown channel(s) {', '.join(unknown)}; use {', '.join(INBOUND_CHANNELS_ALL)}"
    )
# ARC seals count only from these sealers' domains (e.g. a provider that forwards for the service).
INBOUND_TRUSTED_ARC_SEALERS = tuple(
    d.strip().lower() for d in env.list("INBOUND_TRUSTED_ARC_SEALERS", default=[]) if d.strip()
)
INBOUND_RAW_RETENTION_DAYS = env.int("INBOUND_RAW_RETENTION_DAYS", default=180)
TRANSFER_FILE_PAYOUT_HOLD_HOURS = env.int("TRANSFER_FILE_PAYOUT_HOLD_HOURS", default=48)
# The largest message the receiver takes (SMTP SIZE), and the DNS bound of the DKIM key lookups.
INBOUND_MAX_BYTES = 10 * 1024 * 1024
INBOUND_DNS_TIMEOUT_SECONDS = env.float("INBOUND_DNS_TIMEOUT_SECONDS", default=5.0)


def dns_nameservers(value: str) -> tuple[tuple[str, int], ...]:
    """``INBOUND_DNS_NAMESERVERS`` ("192.0.2.53, 192.0.2.54:5353, [2001:db8::53]:53") as (address, port)
    pairs; empty: the system's resolver (``/etc/resolv.conf``)."""
    servers = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        host, port = item, "53"
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            port = (
                rest.removeprefix(":")
                if bracket and rest.startswith(":")
                else ("53" if bracket and not rest else "")
            )
        elif item.count(":") == 1:
            host, _, port = item.partition(":")
        try:
            address = str(ipaddress.ip_address(host))
            number = int(port)
        except ValueError:
            address, number = "", 0
        if not address or not 0 < number < 65536:
            raise ImproperlyConfigured(
                f"INBOUND_DNS_NAMESERVERS: {item!r} is not an IP address with an optional :port "
                "(e.g. 192.0.2.53, 192.0.2.53:5353, [2001:db8::53]:53)"
            )
        servers.append((address, number))
    return tuple(servers)


# The nameservers the DKIM, ARC and SPF lookups ask (comma-separated address[:port]); empty: the system's.
INBOUND_DNS_NAMESERVERS = dns_nameservers(env.str("INBOUND_DNS_NAMESERVERS", default=""))
# Amazon SES's S3 action: the bucket the raw messages land in (the sweeper lists it).
INBOUND_SES_BUCKET = env.str("INBOUND_SES_BUCKET", default="")
INBOUND_SES_PREFIX = env.str("INBOUND_SES_PREFIX", default="")
# SNS posts to the SES webhook must carry Amazon's signature, from one of these topics (any if empty).
INBOUND_SES_VERIFY_SIGNATURE = env.bool("INBOUND_SES_VERIFY_SIGNATURE", default=True)
INBOUND_SES_TOPIC_ARNS = tuple(t.strip() for t in env.list("INBOUND_SES_TOPIC_ARNS", default=[]) if t.strip())
# Folders of further platform templates (``<primary_site>.yaml``), read after the shipped ones: a platform whose
# real e-mails were captured is added here without changing the service's code.
TRANSFER_PLATFORM_DIRS = tuple(d.strip() for d in env.list("TRANSFER_PLATFORM_DIRS", default=[]) if d.strip())


def anymail_settings(env: environ.Env, channels: tuple[str, ...]) -> dict:
    """django-anymail's settings for the providers' inbound webhooks (docs/operations/receiving-mail.md "Provider channels").

    ``INBOUND_WEBHOOK_SECRET`` is the basic-auth ``user:password`` in every provider's webhook URL (a comma
    separates the old and the new one during a rotation); it is required in production as soon as a
    provider channel is enabled, and so is Mailgun's signing key when ``mailgun`` is.
    """
    production = env.str("DJANGO_ENV", default="development") == "production"
    providers = [c for c in channels if c != "smtp"]
    secret = [s.strip() for s in env.list("INBOUND_WEBHOOK_SECRET", default=[]) if s.strip()]
    signing_key = env.str("MAILGUN_WEBHOOK_SIGNING_KEY", default="")
    if production and providers and not secret:
        raise ImproperlyConfigured(
            f"INBOUND_WEBHOOK_SECRET must be set when DJANGO_ENV=production and INBOUND_CHANNELS has {providers[0]}"
        )
    if production and "mailgun" in channels and not signing_key:
        raise ImproperlyConfigured(
            "MAILGUN_WEBHOOK_SIGNING_KEY must be set when INBOUND_CHANNELS has mailgun"
        )
    settings: dict = {
        "WEBHOOK_SECRET": secret,
        # SES's S3 action: the objects are read with these (the region of the bucket; credentials from the
        # usual AWS_* variables or the instance role). SNS subscriptions are confirmed by the webhook itself,
        # which the secret in the subscription's URL proves is ours.
        "AMAZON_SES_CLIENT_PARAMS": {
            k: v
            for k, v in {
                "region_name": env.str("INBOUND_SES_REGION", default=""),
                "endpoint_url": env.str("INBOUND_SES_S3_ENDPOINT_URL", default=""),
            }.items()
            if v
        },
        "AMAZON_SES_AUTO_CONFIRM_SNS_SUBSCRIPTIONS": True,
    }
    if signing_key:
        settings["MAILGUN_WEBHOOK_SIGNING_KEY"] = signing_key
    return settings


ANYMAIL = anymail_settings(env, INBOUND_CHANNELS)
