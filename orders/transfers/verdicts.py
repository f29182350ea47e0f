"""What each stage of the processing hands to the next (plain data, stored on the message as JSON).

- ``AuthVerdict`` — ``orders.transfers.authenticity.authenticate.authenticate``: is the message the platform's own mail to this
  order's transfer address? (DKIM over the raw bytes, alignment, required headers, signed To and Date,
  replay of sha256 or Message-ID, ARC from listed sealers only; SPF recorded.)
- ``ParsedMail`` — ``orders.transfers.reading.platforms.parse``: the platform template's reading of an authentic
  message (kind, event, start, venue, section, row, seats, quantity, accept link).
- ``MatchResult`` — ``orders.transfers.reading.matching.match``: the parsed fields against the order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class AuthVerdict:
    authentic: bool
    # ``temperror``: a DNS lookup failed for now; processing is retried later (1, 5, 15, 60 min) before an
    # ``auth_temperror`` case opens.
    temperror: bool = False
    platform: str = ""  # the primary_site whose registered sender domain signed it ("" if none)
    # The case kind when not authentic: "unverified" (a check failed, the Date outside the order's window
    # included), "replay_suspected" (a validly signed message whose sha256 or Message-ID was already processed
    # for another recipient), "auth_temperror" (with ``temperror``) or "unverifiable".
    case_kind: str = ""
    failures: list[str] = field(default_factory=list)  # human-readable, shown to staff, one per failed check
    dkim: dict = field(default_factory=dict)  # d=, s=, a=, bits, h=, result
    arc: dict = field(default_factory=dict)
    spf: dict = field(default_factory=dict)
    header_from: str = ""
    header_to: str = ""
    header_subject: str = ""
    header_date: str = ""  # ISO 8601
    message_id: str = ""
    sandbox: bool = False  # signed by the sandbox platform's key (accepted for test orders only)
    replay_of: list[int] = field(default_factory=list)  # the earlier InboundMessage pks of a suspected replay
    # The From domain is no platform's sender domain: the first mail of a platform the service does not know.
    unknown_sender: bool = False

    def as_json(self) -> dict:
        return asdict(self)


@dataclass
class ParsedMail:
    platform: str
    kind: str  # "transfer_offer" | "transfer_accepted" | "transfer_canceled"
    event_name: str = ""
    venue_name: str = ""
    starts_at_local: str = ""  # "YYYY-MM-DD HH:MM", venue time, as the mail says
    section: str = ""
    row: str = ""
    seats: list[str] = field(default_factory=list)
    quantity: int = 0
    accept_link: str = ""
    text: str = ""  # the message as text (HTML turned into text), for staff
    missing: list[str] = field(default_factory=list)  # required fields the template could not find

    def as_json(self) -> dict:
        return asdict(self)


@dataclass
class MatchResult:
    matched: bool
    # Field by field: {"section": {"order": "101", "mail": "102", "ok": False, "similarity": 0.67}, ...}
    fields: dict = field(default_factory=dict)
    seats: list[str] = field(default_factory=list)  # the normalised distinct seats this message covers
    quantity: int = 0

    def as_json(self) -> dict:
        return asdict(self)
