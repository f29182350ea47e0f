import json

from django.core.management.base import BaseCommand, CommandError

from partners import services


class Command(BaseCommand):
    help = (
        "Replace the secret of the pair CLIENT_ID names, live (cli_…) or test-mode (cli_test_…); the client_id "
        "stays, and every token of that mode stops working."
    )

    def add_arguments(self, parser):
        parser.add_argument("client_id")
        parser.add_argument("--json", action="store_true", help="Print one JSON line.")

    def handle(self, *args, **options):
        credential = services.credential_by_client_id(client_id=options["client_id"])
        if credential is None:
            raise CommandError(f"No partner has client_id {options['client_id']}")
        issued = services.credentials_rotate(partner=credential.partner, livemode=credential.livemode)
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
