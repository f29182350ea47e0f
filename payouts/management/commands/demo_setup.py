import secrets

from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand
from django.db import transaction

from partners import services
from partners.models import Partner

DEMO_NAME = "Demo Partner"
DEMO_EMAIL = "demo@partner.example"


class Command(BaseCommand):
    help = (
        "Prepare the embedded default for a first look: a demo catalog and a demo partner with payment "
        "methods (created once), and print its credentials with a curl command for a token."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", default="8000")
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, **options):
        base = f"http://{options['host']}:{options['port']}"
        self._seed_catalog()
        issued, created = self._demo_partner()
        admin_password = self._demo_staff()
        portal_password = self._demo_portal_user(issued.partner) if created else None

        out = self.stdout.write
        out("")
        out(self.style.SUCCESS("Partner service ready (embedded default: SQLite, tasks in-process)."))
        out(f"  API docs:   {base}/v1/docs")
        out(f"  Portal:     {base}/portal/")
        out(f"  Admin:      {base}/admin/")
        out("")
        out(
            f"Demo partner {issued.partner.public_id}"
            + ("" if created else " (secret rotated for this run)")
            + ":"
        )
        out(f"  client_id:     {issued.client_id}")
        out(f"  client_secret: {issued.client_secret}")
        out("")
        out("Get a token:")
        out(
            f"  curl -s -X POST {base}/v1/auth/token -H 'Content-Type: application/json' "
            f'-d \'{{"client_id": "{issued.client_id}", "client_secret": "{issued.client_secret}", '
            f'"grant_type": "client_credentials"}}\''
        )
        out("Then: curl -s " + base + "/v1/events -H 'Authorization: Bearer <access_token>'")
        if admin_password:
            out("")
            out(f"Staff login for the admin: admin / {admin_password}  (shown once)")
        if portal_password:
            out(f"Portal login for the demo partner: {DEMO_EMAIL} / {portal_password}  (shown once)")
        out("")

    def _seed_catalog(self) -> None:
        if "seed_catalog" not in get_commands():
            return
        from django.apps import apps

        Event = apps.get_model("catalog", "Event")
        if not Event.objects.exists():
            call_command("seed_catalog", stdout=self.stdout)

    @transaction.atomic
    def _demo_partner(self):
        partner = Partner.objects.filter(name=DEMO_NAME, contact_email=DEMO_EMAIL).first()
        if partner is None:
            issued = services.partner_create(name=DEMO_NAME, contact_email=DEMO_EMAIL)
            from payouts.services.methods import payment_methods_create_sandbox

            payment_methods_create_sandbox(partner=issued.partner)
            return issued, True
        # The secret is never stored, so a later run can only show a new one.
        return services.credentials_rotate(partner=partner), False

    def _demo_staff(self) -> str | None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser("admin", "admin@buyback.example", password)
        return password

    def _demo_portal_user(self, partner: Partner) -> str | None:
        if "create_portal_user" not in get_commands():
            return None
        password = secrets.token_urlsafe(12)
        call_command(
            "create_portal_user", partner.public_id, DEMO_EMAIL, password=password, json=True, stdout=_Null()
        )
        return password


class _Null:
    def write(self, *_args, **_kwargs) -> None:
        pass

    def flush(self) -> None:
        pass
