"""The sandbox platform's records moved from the payouts app to the sandbox app without moving a row."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("payouts", "0007_payout_and_refund_status_history"), ("sandbox", None)]


@pytest.mark.django_db(transaction=True)
def test_rows_written_before_the_move_are_read_by_the_sandbox_app():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate(BEFORE)
    try:
        old_apps = executor.loader.project_state(BEFORE[0]).apps
        OldAccount = old_apps.get_model("payouts", "SandboxAccount")
        assert OldAccount._meta.db_table == "payouts_sandboxaccount"
        OldAccount.objects.create(
            account_id="sbx_acct_before_move",
            reference="ptn_old",
            holder_name="Before The Move",
            method="ach",
            bank_name="Sandbox Test Bank",
            routing_number="110000000",
            account_last4="6789",
            behavior="succeed",
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)

    from payouts.sandbox.models import SandboxAccount

    assert SandboxAccount._meta.app_label == "sandbox"
    assert SandboxAccount.objects.get(account_id="sbx_acct_before_move").holder_name == "Before The Move"
