import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from partners.models import Partner
from partners.portal_services import PortalUserExists, portal_user_invite


class Command(BaseCommand):
    help = (
        "Create a partner portal login for PARTNER_ID. Without --password the user is e-mailed a link to "
        "set a password."
    )

    def add_arguments(self, parser):
        parser.add_argument("partner_id", help="The partner's public id (ptn_…).")
        parser.add_argument("email")
        parser.add_argument("--password", default=None, help="Set this password instead of e-mailing a link.")
        parser.add_argument("--json", action="store_true", help="Print one JSON line.")

    def handle(self, *args, **options):
        partner = Partner.objects.filter(public_id=options["partner_id"]).first()
        if partner is None:
            raise CommandError(f"No partner with id {options['partner_id']}.")
        try:
            portal_user = portal_user_invite(
                partner=partner, email=options["email"], password=options["password"] or None
            )
        except PortalUserExists as exc:
            raise CommandError(str(exc)) from exc
        except ValidationError as exc:
            raise CommandError("Password refused: " + " ".join(exc.messages)) from exc
        result = {
            "user_id": portal_user.user_id,
            "email": portal_user.user.email,
            "partner_id": partner.public_id,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
        elif options["password"]:
            self.stdout.write(
                f"Portal user {result['email']} created for {partner.name}; they can sign in now."
            )
        else:
            self.stdout.write(
                f"Portal user {result['email']} created for {partner.name}; a set-password link was e-mailed."
            )
