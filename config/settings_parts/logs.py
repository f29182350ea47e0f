"""Logging: one console handler, every line stamped with the request's id (config/logging.py); JSON lines in
production, plain text otherwise."""


def logging_config(*, log_format: str, level: str) -> dict:
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "config.logging.RequestIdFilter"}},
        "formatters": {
            "json": {"()": "config.logging.JsonFormatter"},
            "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.request": {"level": "ERROR", "propagate": True},
            "django.server": {"level": "INFO", "propagate": True},
        },
    }
