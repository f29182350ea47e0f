"""The Procfile's ``release`` step (``python -m config.deploy.release``), run once per deploy before the new
processes start: ``migrate`` then ``collectstatic`` (production serves the collected files through WhiteNoise;
without them the admin's sign-in page is a 500). One command, so a process manager that ``exec``s a line runs
both steps; the first failure stops it with a non-zero status. The container image collects its static files
when it is built and sets ``RELEASE_COLLECTSTATIC=false``: its release only migrates."""

from __future__ import annotations

import os
import sys


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    from django.conf import settings

    call_command("migrate", interactive=False)
    if settings.RELEASE_COLLECTSTATIC:
        call_command("collectstatic", interactive=False, verbosity=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
