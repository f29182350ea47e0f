"""Background work of transfer detection: process an inbound message after its commit, retry the ones
deferred by DNS or waiting for the order's confirmation, publish again the ones whose message was lost, and
the seller's reminders and the partial-overdue sweep (``orders.transfers.decision.services.reminders``)."""

import logging

from celery import shared_task

from config.core.publish import publish
from config.core.retrying import RetryingTask
from orders.transfers.decision.services import reminders

logger = logging.getLogger(__name__)

# Every task of transfer detection has a soft time limit (``SoftTimeLimitExceeded`` raised in the task: a
# message then ends with a case) and a hard one (the worker process is replaced), so that no message, file or
# sweep holds a worker of the default queue, where the payout and confirmation work runs too. A message's hard limit
# stays under its run's lease (``orders.transfers.pipeline.process.LEASE``, 2 min).
LIMITS = {
    "message": {"soft_time_limit": 60, "time_limit": 90},
    "sweep": {"soft_time_limit": 30, "time_limit": 60},
    "mail": {"soft_time_limit": 60, "time_limit": 90},
    "long_sweep": {"soft_time_limit": 240, "time_limit": 300},
    # up to 50 ticket PDFs, each decoded for at most 10 s
    "files_sweep": {"soft_time_limit": 540, "time_limit": 600},
}


@shared_task(
    base=RetryingTask, name="orders.transfers.tasks.message_process", acks_late=True, **LIMITS["message"]
)
def message_process(message_pk: int) -> str:
    """Authenticate, parse, match and decide one stored message (``orders.transfers.pipeline.process``)."""
    from orders.transfers.pipeline.process import message_process as process

    return process(message_pk=message_pk)


@shared_task(name="orders.transfers.tasks.messages_process_due", **LIMITS["sweep"])
def messages_process_due() -> int:
    """Publish again the deferred messages now due and the received ones never processed (lost message)."""
    due = reminders.messages_process_due()
    for pk in due:
        publish(message_process, pk)
    if due:
        logger.info("Published %d inbound message(s) again", len(due))
    return len(due)


@shared_task(
    base=RetryingTask, name="orders.transfers.tasks.partial_reminder", max_retries=5, **LIMITS["mail"]
)
def partial_reminder(order_pk: int) -> bool:
    """An hour after a partial transfer: tell the seller what is missing if the order is still partial."""
    return reminders.partial_reminder(order_pk)


@shared_task(name="orders.transfers.tasks.partial_reminders_due", **LIMITS["long_sweep"])
def partial_reminders_due() -> int:
    """Send the partial reminders now due whose delayed task never ran in time."""
    return reminders.partial_reminders_due()


@shared_task(
    base=RetryingTask,
    name="orders.transfers.tasks.seller_transfer_reminder",
    max_retries=5,
    **LIMITS["mail"],
)
def seller_transfer_reminder(order_pk: int, why: str) -> bool:
    """The order waits for its tickets again (``why``: ``recalled``): e-mail the seller the transfer address."""
    return reminders.seller_transfer_reminder(order_pk, why)


@shared_task(
    base=RetryingTask,
    name="orders.transfers.tasks.transfer_question_send",
    max_retries=5,
    **LIMITS["mail"],
)
def transfer_question_send(case_pk: int) -> str:
    """Staff asked the seller about the transfer (the case is resolved): e-mail the question recorded on the
    case, once (``orders.transfers.staff.services.transfer_question_send``); the recipient."""
    from orders.transfers.staff import services as staff_services

    return staff_services.transfer_question_send(case_pk=case_pk)


@shared_task(name="orders.transfers.tasks.transfer_questions_send_due", **LIMITS["sweep"])
def transfer_questions_send_due() -> int:
    """Beat: publish again the seller questions whose task message was lost."""
    from orders.transfers.staff import services as staff_services

    return staff_services.transfer_questions_send_due()


@shared_task(name="orders.transfers.tasks.partial_overdue_sweep", **LIMITS["long_sweep"])
def partial_overdue_sweep() -> int:
    """Open ``partial_overdue`` cases 24 h before the deadline of orders still partial."""
    opened = reminders.partial_overdue_sweep()
    if opened:
        logger.info("Opened partial_overdue for %d order(s): %s", len(opened), ", ".join(opened[:20]))
    return len(opened)


@shared_task(name="orders.transfers.tasks.ses_sweep", acks_late=True, **LIMITS["long_sweep"])
def ses_sweep() -> int:
    """Store the SES S3 objects whose SNS notification never arrived (``orders.transfers.intake.providers``)."""
    from orders.transfers.intake.providers import ses_sweep as sweep

    return sweep()


@shared_task(name="orders.transfers.tasks.ticket_files_sweep", **LIMITS["files_sweep"])
def ticket_files_sweep() -> int:
    """Beat: check the ticket PDF of every pdf order whose check at confirmation never ran."""
    from orders.transfers.files.services import ticket_files_sweep as sweep

    checked = sweep()
    if checked:
        logger.info("Checked %d ticket file(s) that confirmation had not", checked)
    return checked


@shared_task(name="orders.transfers.tasks.raw_purge", **LIMITS["long_sweep"])
def raw_purge() -> int:
    """Beat: delete the raw mail kept past ``INBOUND_RAW_RETENTION_DAYS`` (``orders.transfers.decision.services.retention``)."""
    from orders.transfers.decision.services.retention import raw_purge as purge

    return purge()


@shared_task(
    base=RetryingTask,
    name="orders.transfers.tasks.platform_cases_reprocess",
    max_retries=5,
    **LIMITS["long_sweep"],
)
def platform_cases_reprocess(version_pk: int) -> dict:
    """A template version was activated: process its platform's open unparsed cases again."""
    from orders.transfers.pipeline.reprocess import platform_cases_reprocess as reprocess

    return reprocess(version_pk=version_pk)


@shared_task(name="orders.transfers.tasks.platform_cases_reprocess_due", **LIMITS["long_sweep"])
def platform_cases_reprocess_due() -> int:
    """The open unparsed cases a version in force has not processed yet (its activation's message was lost)."""
    from orders.transfers.pipeline.reprocess import platform_cases_reprocess_due as sweep

    return sweep()
