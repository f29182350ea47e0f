"""The partner flow that `make image-test` (test_image.py) and `make compose-test` (test_compose.py) drive
through the image's containers: the README's "The partner flow" block, as printed, with the test-mode pair
`demo_setup` printed, then the order it made followed to ``paid``: the sandbox's transfer mail through the
inbound receiver and a worker to ``ticket_received``, then the test-mode advance to ``paid``."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable

from tests.faults.live import ROOT, http, wait_for


def readme_flow() -> str:
    """The README's "The partner flow" block, as printed."""
    section = (ROOT / "README.md").read_text().split("\n## The partner flow\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def printed_pairs(output: str) -> dict[str, tuple[str, str]]:
    """The live and test-mode credential pairs `manage.py demo_setup` prints."""
    found = re.findall(
        r"^\s*(live|test-mode) pair:\s+client_id (\S+)\s+client_secret (\S+)$", output, flags=re.M
    )
    return {kind: (client_id, secret) for kind, client_id, secret in found}


def bash(export_line: str, block: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("API", "CLIENT_ID", "CLIENT_SECRET", "TOKEN")}
    return subprocess.run(  # noqa: S603
        ["/bin/bash", "-c", f"set -eo pipefail\n{export_line}\n{block}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )  # fmt: skip


def take_a_test_order_to_paid(api: str, pair: tuple[str, str], logs: Callable[[], str]) -> str:
    """Runs the README's flow against ``api`` (``http://host:port/v1``) with the test-mode ``pair``, follows the
    order it made to ``paid`` and returns its id; ``logs`` tells the containers' side of a failure."""
    client_id, secret = pair
    export_line = f"export API={api} CLIENT_ID={client_id} CLIENT_SECRET={shlex.quote(secret)}"
    result = bash(export_line, readme_flow())
    assert result.returncode == 0, result.stdout + result.stderr + logs()
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    order = answers[-1]["data"]
    # The sandbox's transfer mail went to the inbound receiver; a worker reads it (not at once, as under make
    # run), then the order goes on to paid through the payout.
    assert answers[-2]["data"]["order_id"] == order["order_id"], answers[-2]
    assert (order["livemode"], order["status"]) in (
        (False, "awaiting_transfer"),
        (False, "ticket_received"),
    )

    token = http("POST", f"{api}/auth/token", json_body={"client_id": client_id, "client_secret": secret, "grant_type": "client_credentials"})  # fmt: skip
    auth = {"Authorization": f"Bearer {token.body['data']['access_token']}"}

    def status() -> str:
        return http("GET", f"{api}/orders/{order['order_id']}", headers=auth).body["data"]["status"]

    # The transfer mail, through the inbound receiver and a worker, moves it to ticket_received.
    assert wait_for(lambda: status() == "ticket_received", timeout=180, interval=1), logs()
    # Test orders are never paid out: the test-mode advance walks the payout steps, through the same life cycle.
    advanced = http("POST", f"{api}/test/orders/{order['order_id']}/advance", json_body={"to": "paid"}, headers=auth)  # fmt: skip
    assert advanced.status == 200, advanced.body
    assert status() == "paid", logs()
    return order["order_id"]
