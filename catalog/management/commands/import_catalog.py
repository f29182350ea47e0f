import json as jsonlib
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from catalog.importing import FileError, read_items
from catalog.services import catalog_import


class Command(BaseCommand):
    help = (
        "Import events, sections and rows from a CSV or JSON file (one item per ticket row). Events are "
        "matched on external_id, so importing the same file again changes nothing. Bad lines are reported "
        "and skipped; the good ones are applied. Exits with status 1 when any line was refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=["csv", "json"], help="Default: from the file extension.")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report; keep nothing.")
        parser.add_argument("--json", action="store_true", help="Print the report as one JSON object.")

    def handle(self, *args, file: Path, format: str | None, dry_run: bool, json: bool, **options):
        try:
            items = read_items(file, fmt=format)
        except FileError as exc:
            raise CommandError(str(exc)) from exc
        report = catalog_import(items=items, dry_run=dry_run)
        if json:
            self.stdout.write(_json_dumps({**report.as_dict(), "dry_run": dry_run}))
        else:
            prefix = "Dry run, nothing kept. " if dry_run else ""
            self.stdout.write(
                f"{prefix}Events: {report.events_created} created, {report.events_updated} updated, "
                f"{report.events_unchanged} unchanged. Rows: {report.rows_created} created, "
                f"{report.rows_updated} updated, {report.rows_unchanged} unchanged"
                f" ({report.rows_quantity_kept} kept their quantity instead of the file's). "
                f"Lines: {report.lines_applied} applied, {len(report.refused)} refused."
            )
            for line, error in report.refused:
                self.stderr.write(f"line {line}: {error}")
        if report.refused:
            kept = "nothing was kept (dry run)" if dry_run else "the other lines were applied"
            raise CommandError(f"{len(report.refused)} line(s) refused; {kept}.")


def _json_dumps(value) -> str:
    return jsonlib.dumps(value, default=str)
