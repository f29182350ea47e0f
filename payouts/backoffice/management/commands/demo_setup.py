import os
import secrets
import shlex
import sys

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand
from django.db import transaction

from catalog.seeding import WALKTHROUGH_SEARCH, walkthrough_event_ensure
from partners import services
from partners.models import Partner, PartnerCredential, PartnerTestCredential

DEMO_NAME = "Demo Partner"
DEMO_EMAIL = "demo@partner.example"
ADMIN_USERNAME = "admin"


class Command(BaseCommand):
    help = (
        "Prepare `make run`'s instance for a first look: a demo catalog with the walk-through's event, "
        "a demo partner with payment methods, an admin and a portal login (created once). Prints both "
        "credential pairs and the passwords when it creates them; a later run changes none of them and says "
        "how to make new ones (a secret is stored as a digest only, so it cannot be shown again)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", default="8000")
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, **options):
        base = f"http://{options['host']}:{options['port']}"
        self._seed_catalog()
        walkthrough_event_ensure()
        partner, issued = self._demo_partner()
        admin_password = self._demo_staff()
        portal_password = self._demo_portal_user(partner) if issued else None
        live_id = (
            PartnerCredential.objects.filter(partner=partner).values_list("client_id", flat=True).first()
        )
        test_id = (
            PartnerTestCredential.objects.filter(partner=partner).values_list("client_id", flat=True).first()
        )
        # In another shell, manage.py reaches this instance's database through its DATA_DIR (config/deploy/local.py).
        data_dir = (
            ""
            if settings.DATA_DIR == settings.BASE_DIR
            else f"DATA_DIR={shlex.quote(str(settings.DATA_DIR))} "
        )
        manage = f"{data_dir}{_python()} manage.py"

        out = self.stdout.write
        out("")
        out(
            self.style.SUCCESS(
                "Partner service ready: every role of the Procfile on its own PostgreSQL and Redis."
            )
        )
        out(f"  API docs:   {base}/v1/docs")
        out(f"  Portal:     {base}/portal/")
        out(f"  Admin:      {base}/admin/")
        out("")
        if issued:
            out(f"Demo partner {partner.public_id}: its secrets are shown only now (stored as digests).")
            out(f"  live pair:       client_id {issued.client_id}  client_secret {issued.client_secret}")
            out(
                f"  test-mode pair:  client_id {issued.test_client_id}  "
                f"client_secret {issued.test_client_secret}"
            )
            out("")
            out("The walk-through (README.md, docs/partners/integrating.md) in test mode, in another shell:")
            out(f"  export {_exports(base, issued.test_client_id, issued.test_client_secret)}")
            out("The same with the live pair:")
            out(f"  export {_exports(base, issued.client_id, issued.client_secret)}")
        else:
            out(f"Demo partner {partner.public_id}: live client_id {live_id}, test-mode client_id {test_id}.")
            out("  Its secrets were shown when it was created; they are stored as digests only. A new secret")
            out("  for a pair (the pair's client_id stays, its tokens stop working):")
            out(f"    {manage} rotate_credentials {test_id} --json")
            out(f"    {manage} rotate_credentials {live_id} --json")
            out("  then, for the walk-through (README.md, docs/partners/integrating.md) in test mode:")
            out(f"    export {_exports(base, test_id, '<the new client_secret>')}")
        out(
            f"  The walk-through finds the demo event with q={WALKTHROUGH_SEARCH} (section Lower 101, row B)."
        )
        out(
            f"  Simulate the seller's ticket transfer for a test order: {manage} send_test_transfer <order_id>"
        )
        out("")
        staff = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        if admin_password:
            out(f"Admin login: {ADMIN_USERNAME} / {admin_password}  (shown only now)")
        elif staff is not None:
            out(
                f"Admin login: {staff.get_username()}; a new password: {manage} changepassword {staff.get_username()}"
            )
        if portal_password:
            out(f"Portal login for the demo partner: {DEMO_EMAIL} / {portal_password}  (shown only now)")
        else:
            out(
                f"Portal login for the demo partner: {DEMO_EMAIL}; a new password: {manage} changepassword "
                f"{DEMO_EMAIL}, or the portal's {base}/portal/password-reset (the e-mail with the link is "
                "printed in this terminal)"
            )
        out("")

    def _seed_catalog(self) -> None:
        if "seed_catalog" not in get_commands():
            return
        from django.apps import apps

        Event = apps.get_model("catalog", "Event")
        if not Event.objects.exists():
            call_command("seed_catalog", stdout=self.stdout)

    @transaction.atomic
    def _demo_partner(self) -> tuple[Partner, services.IssuedCredentials | None]:
        """The demo partner, and its credentials when this run created it. An existing one is left alone:
        its secrets are stored as digests only, and rotating them on every start would break every script
        that kept them."""
        partner = Partner.objects.filter(name=DEMO_NAME, contact_email=DEMO_EMAIL).first()
        if partner is not None:
            return partner, None
        issued = services.partner_create(name=DEMO_NAME, contact_email=DEMO_EMAIL)
        from payouts.services.methods import payment_methods_create_sandbox

        payment_methods_create_sandbox(partner=issued.partner)
        return issued.partner, issued

    def _demo_staff(self) -> str | None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(ADMIN_USERNAME, "admin@buyback.example", password)
        return password

    def _demo_portal_user(self, partner: Partner) -> str | None:
        if "create_portal_user" not in get_commands():
            return None
        password = secrets.token_urlsafe(12)
        call_command(
            "create_portal_user", partner.public_id, DEMO_EMAIL, password=password, json=True, stdout=_Null()
        )
        return password


def _exports(base: str, client_id: str | None, client_secret: str) -> str:
    return " ".join(
        f"{name}={shlex.quote(value)}"
        for name, value in (
            ("API", f"{base}/v1"),
            ("CLIENT_ID", client_id or ""),
            ("CLIENT_SECRET", client_secret),
        )
    )


def _python() -> str:
    """The interpreter running this command, as short as it can be written from the current directory."""
    executable = sys.executable or "python"
    relative = os.path.relpath(executable)
    return relative if not relative.startswith("..") else executable


class _Null:
    def write(self, *_args, **_kwargs) -> None:
        pass

    def flush(self) -> None:
        pass
