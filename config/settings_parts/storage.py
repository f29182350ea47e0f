"""Where files live (``STORAGES``): ticket PDFs and raw transfer mail in S3 or on a local disk, static files served
by whitenoise (docs/operations/settings.md "Settings")."""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.settings_parts.environment import PRODUCTION, env


def storages_config(*, bucket: str, media_root: Path, media_shared: bool) -> dict:
    if bucket:
        default = {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": bucket,
                "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default="") or None,
                "region_name": env.str("AWS_S3_REGION_NAME", default="") or None,
                "default_acl": "private",
                "querystring_auth": True,
                "file_overwrite": False,
            },
        }
    else:
        # Ticket files and raw transfer mail on the local disk: another host's worker could not read them, so
        # production takes this only from an operator who declares MEDIA_ROOT shared by every host (or has one).
        if PRODUCTION and not media_shared:
            raise ImproperlyConfigured(
                "Production stores files in S3 (AWS_STORAGE_BUCKET_NAME): set it, or MEDIA_SHARED=true when "
                "MEDIA_ROOT is a disk every host of this deployment shares (or there is only one host)"
            )
        default = {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": media_root, "base_url": None},
        }
    return {
        "default": default,
        "staticfiles": {
            "BACKEND": (
                "whitenoise.storage.CompressedManifestStaticFilesStorage"
                if PRODUCTION
                else "django.contrib.staticfiles.storage.StaticFilesStorage"
            )
        },
    }
