"""/metrics in the production shape: one gunicorn with two workers, samples collected across both."""

import threading
from pathlib import Path

import pytest
from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import make_partner
from tests.faults.live import bearer_auth, http, production_env
from tests.orders.factories import order_row

pytestmark = pytest.mark.django_db(transaction=True)

HEALTHZ_BY_ROUTE = "django_http_responses_total_by_status_view_method"


def scrape(url: str) -> dict:
    reply = http("GET", url + "/metrics")
    assert reply.status == 200, reply.body
    return {family.name: family for family in text_string_to_metric_families(reply.body["_text"])}


def healthz_count(found: dict) -> float:
    return sum(
        sample.value
        for sample in found[HEALTHZ_BY_ROUTE].samples
        if sample.labels.get("view") == "healthz" and sample.name.endswith("_total")
    )


def orders_created(found: dict) -> float:
    return next(s.value for s in found["buyback_orders_created"].samples if s.name.endswith("_total"))


def workers_that_served_healthz(directory: Path) -> int:
    """How many processes' sample files count a request to /healthz."""
    served = 0
    for path in directory.glob("counter_*.db"):
        for metric in multiprocess.MultiProcessCollector._read_metrics([str(path)]).values():
            if any(
                dict(s.labels).get("view") == "healthz" and s.value > 0
                for s in metric.samples
                if s.name.startswith(HEALTHZ_BY_ROUTE)
            ):
                served += 1
                break
    return served


def burst(url: str, count: int) -> None:
    start = threading.Barrier(count)

    def one() -> None:
        start.wait()
        assert http("GET", url + "/healthz").status == 200

    threads = [threading.Thread(target=one) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_the_counters_of_two_gunicorn_workers_add_up_in_one_scrape(processes, tmp_path):
    directory = tmp_path / "prometheus"
    row = order_row(available_quantity=10)
    creds = make_partner(name="Metered Resale", email="ops@metered.example")
    url = processes.web(production_env(PROMETHEUS_MULTIPROC_DIR=str(directory)), workers=2)

    before = scrape(url)
    sent = 0
    for _ in range(30):  # bursts until both workers have answered some (the kernel picks the acceptor)
        burst(url, 16)
        sent += 16
        if workers_that_served_healthz(directory) >= 2:
            break
    assert workers_that_served_healthz(directory) >= 2

    auth = bearer_auth(url, creds)
    quote = http(
        "POST",
        url + "/v1/quotes",
        json_body={
            "event_id": row.section.event.event_id,
            "section_name": row.section.name,
            "row_name": row.name,
            "quantity": 2,
        },
        headers=auth,
    )
    assert quote.status == 201, quote.body
    order = http(
        "POST",
        url + "/v1/orders",
        form={"quote_id": quote.body["data"]["quote_id"], "delivery_type": "mobile_transfer", "is_ready_to_deliver": "true"},
        headers=auth,
    )  # fmt: skip
    assert order.status == 201, order.body

    after = scrape(url)
    assert healthz_count(after) - healthz_count(before) == sent
    assert orders_created(after) - orders_created(before) == 1
    # Through a proxy (nginx adds X-Forwarded-For) /metrics answers exactly as a path the site does not have.
    proxied = http("GET", url + "/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    unknown = http("GET", url + "/no-such-page", headers={"X-Forwarded-For": "203.0.113.9"})
    assert proxied.status == unknown.status != 200
    assert "buyback_" not in str(proxied.body)


def test_the_web_process_behind_nginx_never_exposes_metrics_and_sums_its_workers(processes, tmp_path):
    url = processes.proxied_web(production_env(), workers=2)
    directory = tmp_path / "web-nginx" / "prometheus"
    for _ in range(10):
        assert http("GET", url + "/healthz").status == 200
    proxied = http("GET", url + "/metrics")
    unknown = http("GET", url + "/no-such-page")
    assert proxied.status == unknown.status != 200
    assert "buyback_" not in str(proxied.body)
    # The workers write their samples where config.deploy.serve pointed them.
    assert len(list(directory.glob("counter_*.db"))) >= 2
