from django.apps import AppConfig


class IdempotencyConfig(AppConfig):
    name = "partners.idempotency"
    label = "idempotency"
    verbose_name = "Idempotency keys"
