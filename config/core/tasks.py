from celery import shared_task

from . import confirmation_ids


@shared_task(name="config.core.tasks.staff_confirmations_purge", ignore_result=True)
def staff_confirmations_purge() -> int:
    """Periodic (beat): delete the staff confirmations' ids too old to be used."""
    return confirmation_ids.staff_confirmations_purge()
