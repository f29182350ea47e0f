"""A small partner client over HTTP (requests), shared by the benchmark's set-up and the soak test."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from urllib.parse import quote

import requests

SELLER = {
    "first_name": "Bench",
    "last_name": "Seller",
    "email": "seller@bench.example",
    "phone_number": "+15555550100",
}


@dataclass(frozen=True)
class Target:
    """A row that quotes and orders can be made on."""

    event_id: str
    section_name: str
    row_name: str

    def quote_body(self, quantity: int = 1) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "section_name": self.section_name,
            "row_name": self.row_name,
            "quantity": quantity,
            "user_metadata": SELLER,
        }

    @property
    def rows_path(self) -> str:
        return f"/v1/events/{self.event_id}/sections/{quote(self.section_name, safe='')}/rows"


class ApiError(RuntimeError):
    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self.status = response.status_code
        try:
            self.code = response.json()["error"]["code"]
        except Exception:
            self.code = None
        super().__init__(f"{response.request.method} {response.request.path_url}: {self.status} {self.code}")


class PartnerClient:
    def __init__(self, base_url: str, *, client_id: str, client_secret: str, timeout: float = 30) -> None:
        self.base_url = base_url.rstrip("/")
        self.client_id = client_id
        self.client_secret = client_secret
        self.timeout = timeout
        self.session = requests.Session()
        self.token: str | None = None

    def request(self, method: str, path: str, *, auth: bool = True, **kwargs: Any) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if auth:
            if self.token is None:
                self.authenticate()
            headers["Authorization"] = f"Bearer {self.token}"
        return self.session.request(
            method, self.base_url + path, headers=headers, timeout=self.timeout, **kwargs
        )

    def authenticate(self) -> str:
        response = self.request(
            "POST",
            "/v1/auth/token",
            auth=False,
            json={
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "grant_type": "client_credentials",
            },
        )
        if response.status_code != 200:
            raise ApiError(response)
        self.token = response.json()["data"]["access_token"]
        return self.token

    def data(self, response: requests.Response, expected: int = 200) -> Any:
        if response.status_code != expected:
            raise ApiError(response)
        return response.json()["data"]

    def events(self, **params: Any) -> dict[str, Any]:
        return self.data(self.request("GET", "/v1/events", params=params))

    def sections(self, event_id: str) -> list[dict[str, Any]]:
        return self.data(self.request("GET", f"/v1/events/{event_id}/sections", params={"limit": 100}))[
            "results"
        ]

    def rows(self, target_path: str) -> list[dict[str, Any]]:
        return self.data(self.request("GET", target_path, params={"limit": 100}))["results"]

    def quote(self, target: Target, quantity: int = 1) -> requests.Response:
        return self.request("POST", "/v1/quotes", json=target.quote_body(quantity))

    def order(
        self, quote_id: str, *, pdf: bytes | None = None, file_obj: io.IOBase | None = None
    ) -> requests.Response:
        fields = {
            "quote_id": quote_id,
            "delivery_type": "pdf" if (pdf is not None or file_obj is not None) else "mobile_transfer",
            "is_ready_to_deliver": "true",
        }
        files = None
        if pdf is not None:
            files = {"file": ("tickets.pdf", pdf, "application/pdf")}
        elif file_obj is not None:
            files = {"file": ("tickets.pdf", file_obj, "application/pdf")}
        if files is None:
            # multipart even without a file: the order endpoint takes multipart only
            files = {k: (None, v) for k, v in fields.items()}
            return self.request("POST", "/v1/orders", files=files)
        return self.request("POST", "/v1/orders", data=fields, files=files)


def discover_targets(
    client: PartnerClient, *, want: int, min_days_ahead: int = 3, max_events: int = 200
) -> list[Target]:
    """Rows of events starting at least ``min_days_ahead`` days from now, spread over many events."""
    targets: list[Target] = []
    params: dict[str, Any] = {
        "limit": 100,
        "date_from": (date.today() + timedelta(days=min_days_ahead)).isoformat(),
    }
    seen_events = 0
    while len(targets) < want and seen_events < max_events:
        page = client.events(**params)
        for event in page["results"]:
            if event.get("status") not in (None, "scheduled"):
                continue
            seen_events += 1
            for section in client.sections(event["event_id"]):
                path = Target(event["event_id"], section["section_name"], "").rows_path
                for row in client.rows(path)[:3]:
                    targets.append(Target(event["event_id"], section["section_name"], row["row_name"]))
                    break
            if len(targets) >= want:
                break
        if not page["has_more"]:
            break
        params["cursor"] = page["next_cursor"]
    return targets[:want]


def make_pdf(size: int) -> bytes:
    """A file of exactly ``size`` bytes that starts like a PDF."""
    head = b"%PDF-1.4\n%bench\n"
    tail = b"\n%%EOF\n"
    return head + b"0" * (size - len(head) - len(tail)) + tail
