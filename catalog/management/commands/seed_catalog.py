from django.core.management.base import BaseCommand, CommandError

from catalog.seeding import catalog_seed


class Command(BaseCommand):
    help = (
        "Add N generated events (venues, performers, reserved and general-admission sections, rows with "
        "prices and restrictions) to the catalog. On an empty catalog, first add the demo events: some "
        "past, one starting within 36 hours, others up to 180 days ahead."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--events", type=int, default=200, help="How many new events to add (default 200)."
        )
        parser.add_argument("--seed", type=int, default=None, help="Random seed, for a repeatable catalog.")

    def handle(self, *args, events: int, seed: int | None, **options):
        if events < 0:
            raise CommandError("--events must be 0 or more.")
        report = catalog_seed(events=events, seed=seed)
        demo = f" (including {report.demo_events} demo events)" if report.demo_events else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"Added {report.events} events{demo}, {report.sections} sections and {report.rows} rows "
                f"in {report.seconds:.1f}s."
            )
        )
