import json

from django.core.management.base import BaseCommand, CommandError

from partners import services
from partners.models import PartnerCredential


class Command(BaseCommand):
    help = "Replace a partner's client secret (the client_id stays) and revoke all its tokens."

    def add_arguments(self, parser):
        parser.add_argument("client_id")
        parser.add_argument("--json", action="store_true", help="Print one JSON line.")

    def handle(self, *args, **options):
        credential = (
            PartnerCredential.objects.select_related("partner").filter(client_id=options["client_id"]).first()
        )
        if credential is None:
            raise CommandError(f"No partner has client_id {options['client_id']}")
        issued = services.credentials_rotate(partner=credential.partner)
        result = {
            "partner_id": issued.partner.public_id,
            "client_id": issued.client_id,
            "client_secret": issued.client_secret,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"New secret for {issued.client_id}: {issued.client_secret}\n"
                "Tokens issued before now no longer work. The secret is shown only now."
            )
