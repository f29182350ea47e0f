"""What an operator imports: the Grafana dashboard and the Prometheus alert rules (config/deploy/observability)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import yaml

OBSERVABILITY = Path(__file__).resolve().parents[2] / "config" / "deploy" / "observability"

# The service's own metrics as Prometheus names them (counters end in _total).
BUYBACK_SERIES = {
    "buyback_orders_created_total",
    "buyback_order_transitions_total",
    "buyback_outbox_pending",
    "buyback_outbox_oldest_age_seconds",
    "buyback_webhook_attempts_total",
    "buyback_task_queue_length",
    "buyback_payouts",
    "buyback_staff_queue",
}
METRIC_NAME = re.compile(r"\b(buyback_[a-z_]+|django_[a-z_]+)\b")


def dashboard_exprs() -> dict[str, list[str]]:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    return {panel["title"]: [t["expr"] for t in panel["targets"]] for panel in dashboard["panels"]}


def test_the_dashboard_is_valid_json_with_a_panel_per_buyback_metric_and_the_http_panels():
    panels = dashboard_exprs()
    for series in BUYBACK_SERIES:
        showing = [
            title for title, exprs in panels.items() if any(series in METRIC_NAME.findall(e) for e in exprs)
        ]
        assert showing, f"no panel shows {series}"
    joined = " ".join(e for exprs in panels.values() for e in exprs)
    assert "django_http_responses_total_by_status_view_method_total" in joined  # rate and 5xx
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in joined  # latency
    assert 'status=~"5.."' in joined


def load_rules() -> dict:
    return yaml.safe_load((OBSERVABILITY / "alerts.yml").read_text())


def test_the_alert_rules_have_prometheus_structure_and_cover_the_operator_alerts():
    document = load_rules()
    assert set(document) == {"groups"}
    alerts = {}
    for group in document["groups"]:
        assert set(group) <= {"name", "rules", "interval"} and group["name"] and group["rules"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule["alert"])
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            assert re.fullmatch(r"\d+[smhd]", rule["for"])
            assert rule["labels"]["severity"] in {"page", "warn"}
            assert {"summary", "description"} <= set(rule["annotations"])
            assert rule["expr"].count("(") == rule["expr"].count(")")
            assert rule["alert"] not in alerts
            alerts[rule["alert"]] = rule["expr"]
    # 5xx rate, p95 latency, outbox age, webhook failure ratio, queue length, payouts stuck in one status.
    assert 'status=~"5.."' in alerts["BuybackHigh5xxRate"]
    assert "histogram_quantile(0.95" in alerts["BuybackSlowRequests"]
    assert "buyback_outbox_oldest_age_seconds" in alerts["BuybackOutboxLagging"]
    assert "buyback_webhook_attempts_total" in alerts["BuybackWebhookFailureRatio"]
    assert "buyback_task_queue_length" in alerts["BuybackTaskQueueBacklog"]
    assert "buyback_payouts" in alerts["BuybackPayoutsStuck"]
    # Every alert is described for the operator.
    monitoring = (OBSERVABILITY.parents[2] / "docs/operations/monitoring.md").read_text()
    for name in alerts:
        assert f"| `{name}` |" in monitoring, f"docs/operations/monitoring.md has no runbook row for {name}"
    # Debian's `prometheus` package ships promtool; `make install` installs it.
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: make install installs Debian's prometheus package"
    result = subprocess.run(  # noqa: S603
        [promtool, "check", "rules", str(OBSERVABILITY / "alerts.yml")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_metric_the_rules_and_the_dashboard_name_is_one_the_service_exports(client, db):
    from django.core.cache import cache
    from django.db import connection

    # One request, one statement and one cache hit, so every family has a sample.
    assert client.get("/healthz").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    cache.set("observability:probe", 1)
    assert cache.get("observability:probe") == 1
    body = client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    exported = {
        line.split("{")[0].split(" ")[0] for line in body.splitlines() if line and not line.startswith("#")
    }
    families = {line.split(" ")[2] for line in body.splitlines() if line.startswith("# TYPE ")}
    named = set()
    for exprs in dashboard_exprs().values():
        for expr in exprs:
            named |= set(METRIC_NAME.findall(expr))
    for group in load_rules()["groups"]:
        for rule in group["rules"]:
            named |= set(METRIC_NAME.findall(rule["expr"]))
    for name in named:
        base = re.sub(r"_(total|bucket|sum|count)$", "", name)
        assert name in exported or name in families or base in families, name
