"""``python manage.py export_platform_template PLATFORM [--template-version N] [--output FILE]``: a platform's template
version as its YAML file (docs/staff-guide.md "Ship a template in the repository"). Only the version in force is
exported (``--template-version`` names it, else it is taken): a draft, superseded or discarded version would load
as the platform's version 1 with no approval. Without ``--output``, the file goes to standard output. The file loads as that platform's
shipped default (version 1) wherever it is put in the platforms folder or a ``TRANSFER_PLATFORM_DIRS`` folder."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from orders.transfers.models import PlatformTemplateVersion
from orders.transfers.reading.selectors import data_in_force
from orders.transfers.reading.templates_store import TemplateInvalid, data_dump, data_validate


class Command(BaseCommand):
    help = "Write a platform's template version (default: the one in force) in the template file's format."

    def add_arguments(self, parser):
        parser.add_argument("platform", help="the platform (primary_site)")
        parser.add_argument(
            "--template-version",
            type=int,
            help="the version number, which must be in force (default: the one in force)",
        )
        parser.add_argument("--output", help="the file to write (default: standard output)")

    def handle(self, *args, **options):
        platform = options["platform"].strip().lower()
        if options["template_version"] is not None:
            found = PlatformTemplateVersion.objects.filter(
                platform=platform, version=options["template_version"]
            ).first()
            if found is None:
                raise CommandError(f"{platform} has no version {options['template_version']}.")
            if found.state != PlatformTemplateVersion.State.ACTIVE:
                raise CommandError(
                    f"{platform} version {found.version} is {found.get_state_display().lower()}: only the version "
                    "in force is exported (a file loads as version 1, with no approval)."
                )
            data = found.data
        else:
            data = data_in_force(platform)
            if data is None:
                raise CommandError(f"No platform {platform!r}: neither a file nor a version in force.")
        try:
            data_validate(data, platform=platform)
        except TemplateInvalid as exc:
            raise CommandError(str(exc)) from exc
        text = data_dump(data)
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {platform} to {options['output']}")
        else:
            self.stdout.write(text, ending="")
