"""What the transfer pages show staff: an inbound mail as plain text (never rendered: a transfer e-mail is
untrusted input, its HTML turned into text and escaped), the authentication summary, and the evidence
against the order field by field."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from orders.transfers.intake.selectors import raw_read
from orders.transfers.models import InboundMessage, TransferCase

MAX_TEXT_CHARS = 20_000
NONE = mark_safe('<span class="quiet">—</span>')  # noqa: S308  (a constant)


# --- the mail as text --------------------------------------------------------------------------------------
def _html_to_text(html: str) -> str:
    from inscriptis import get_text

    return get_text(html)


def mail_text(raw: bytes) -> tuple[dict[str, str], str, list[str]]:
    """(headers shown to staff, the body as text, attachments as "name (type, size)") of a raw message: the
    text part when there is one, else the HTML part turned into text. Nothing in it is ever rendered."""
    parsed: EmailMessage = email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[assignment]
    headers = {name: str(parsed.get(name, "")) for name in ("From", "To", "Subject", "Date", "Message-ID")}
    text = ""
    try:
        body = parsed.get_body(preferencelist=("plain", "html"))
        if body is not None:
            content = body.get_content()
            text = _html_to_text(content) if body.get_content_type() == "text/html" else content
    except (LookupError, ValueError, AttributeError):
        text = raw.decode("utf-8", "replace")
    attachments = []
    for part in parsed.iter_attachments():
        payload = part.get_payload(decode=True) or b""
        attachments.append(
            f"{part.get_filename() or 'unnamed'} ({part.get_content_type()}, {len(payload)} bytes)"
        )
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + "\n… (cut: the rest is in the raw message)"
    return headers, text.strip(), attachments


def message_as_text(message: InboundMessage | None) -> SafeString:
    """The mail of ``message`` as escaped text inside ``<pre>``, with its headers and attachments."""
    if message is None:
        return NONE
    raw = raw_read(message)
    if raw is None:
        parsed_text = (message.verdicts.get("parse") or {}).get("text", "")
        if not parsed_text:
            return format_html(
                '<p class="quiet">The raw message is not kept ({}).</p>', message.get_outcome_display()
            )
        headers, text, attachments = {"Subject": message.header_subject}, parsed_text, []
    else:
        headers, text, attachments = mail_text(raw)
    head = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", ((k, v) for k, v in headers.items() if v))
    files = (
        format_html("<p><strong>Attachments:</strong> {}</p>", "; ".join(attachments)) if attachments else ""
    )
    return format_html(
        '<div class="transfer-mail" data-testid="mail-text"><table class="transfer-mail-headers">{}</table>'
        '<pre class="transfer-mail-body">{}</pre>{}</div>',
        head,
        text or "(no text)",
        files,
    )


# --- authentication --------------------------------------------------------------------------------------------
def _org_domain(domain: str) -> str:
    from publicsuffixlist import PublicSuffixList

    domain = domain.lower().strip(".")
    return PublicSuffixList().privatesuffix(domain) or domain


def _yes_no(value) -> str:
    return {True: "yes", False: "no", None: "not checked"}.get(value, str(value))


def auth_summary(message: InboundMessage | None) -> SafeString:
    """DKIM (d=, s=, result), alignment with the From domain, every failed check, SPF and ARC, from the
    message's ``verdicts["auth"]`` (and ``verdicts["spf"]`` when the channel recorded SPF apart)."""
    if message is None:
        return NONE
    auth = message.verdicts.get("auth") or {}
    if not auth:
        return format_html(
            '<p class="quiet">Not authenticated yet (stage: {}).</p>', message.get_stage_display()
        )
    dkim = auth.get("dkim") or {}
    from_domain = (auth.get("header_from") or message.header_from).rpartition("@")[2].strip("> ").lower()
    d = str(dkim.get("d") or "")
    aligned = dkim.get("aligned")
    if aligned is None and d and from_domain:
        aligned = _org_domain(d) == _org_domain(from_domain)
    spf = auth.get("spf") or message.verdicts.get("spf") or {}
    arc = auth.get("arc") or {}
    rows = [
        ("Authentic", _yes_no(auth.get("authentic"))),
        ("Platform", auth.get("platform") or "—"),
        ("DKIM", f"d={d or '—'}  s={dkim.get('s') or '—'}  result={dkim.get('result') or '—'}"),
        ("DKIM key / headers", f"{dkim.get('bits') or '—'} bits, h={dkim.get('h') or '—'}"),
        ("Aligned with From", f"{_yes_no(aligned)} (From domain {from_domain or '—'})"),
        ("SPF", " ".join(f"{k}={v}" for k, v in spf.items()) or "not recorded"),
        ("ARC", " ".join(f"{k}={v}" for k, v in arc.items()) or "none"),
    ]
    if auth.get("sandbox"):
        rows.append(("Sandbox signer", "yes (accepted for test orders only)"))
    failures = auth.get("failures") or []
    failed = (
        format_html(
            "<ul class='transfer-failures'>{}</ul>",
            format_html_join("", "<li>{}</li>", ((f,) for f in failures)),
        )
        if failures
        else format_html("<p>{}</p>", "No check failed.")
    )
    return format_html(
        '<div data-testid="auth-summary"><table>{}</table><p><strong>Failed checks</strong></p>{}</div>',
        format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows),
        failed,
    )


# --- the evidence against the order --------------------------------------------------------------------------
def _fields_of(case: TransferCase) -> dict:
    match = ((case.message.verdicts if case.message else {}) or {}).get("match") or {}
    fields = match.get("fields") or case.details.get("fields") or case.details
    return {k: v for k, v in fields.items() if isinstance(v, dict) and ("order" in v or "mail" in v)}


def _shown(value) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def evidence_table(case: TransferCase) -> SafeString:
    """field | order | mail | ok, one row a field; a similarity score only explains a mismatch."""
    fields = _fields_of(case)
    if not fields:
        return format_html('<p class="quiet">{}</p>', "No field-by-field evidence for this case.")
    rows = []
    # What differs first: that is what staff decide on.
    for name, value in sorted(fields.items(), key=lambda item: (item[1].get("ok") is not False, item[0])):
        ok = value.get("ok")
        mark = "✔ same" if ok else ("✘ differs" if ok is False else "—")
        similarity = value.get("similarity")
        if ok is False and similarity is not None:
            mark += f" (similarity {float(similarity):.2f})"
        rows.append(
            (
                name.replace("_", " ").capitalize(),
                _shown(value.get("order")),
                _shown(value.get("mail")),
                "ok" if ok else "bad",
                mark,
            )
        )
    return format_html(
        '<table class="transfer-evidence" data-testid="evidence"><thead><tr><th>Field</th><th>Order</th>'
        "<th>Mail</th><th>OK</th></tr></thead><tbody>{}</tbody></table>",
        format_html_join("", '<tr><th>{}</th><td>{}</td><td>{}</td><td class="{}">{}</td></tr>', rows),
    )


def age(created_at) -> str:
    """ "12 min", "5 h", "3 d": how long a case has been waiting."""
    seconds = max(0, int((timezone.now() - created_at).total_seconds()))
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


# What the service's own processing did with a case's mail, in words (``details["decided_by"]["outcome"]``).
PROCESSED_OUTCOMES = {
    "matched": "the transfer matched the order",
    "partial": "part of the tickets matched the order",
    "accepted": "the transfer was recorded as accepted",
    "recalled": "the transfer was recalled",
    "case": "it opened a case of its own",
    "duplicate": "it repeated a message already processed",
    "ignored": "it was ignored",
}


def resolution(case: TransferCase) -> str:
    """The case's resolution as staff read it: a case the service closed itself by processing its mail again
    says what the mail did (its stored resolution stays ``dismissed``), not "Dismissed"."""
    if case.state != TransferCase.State.RESOLVED:
        return "—"
    decided = case.details.get("decided_by") if isinstance(case.details, dict) else None
    if not decided or case.resolved_by.startswith("staff:"):
        return case.get_resolution_display()
    outcome = PROCESSED_OUTCOMES.get(
        decided.get("outcome") or "", "it is waiting for the order's confirmation"
    )
    order = f" (the order is {case.order.get_status_display().lower()})" if case.order is not None else ""
    return (
        f"Closed by the service: the mail was read again with the {decided.get('platform')} template version "
        f"{decided.get('template_version')} and {outcome}{order}"
    )
