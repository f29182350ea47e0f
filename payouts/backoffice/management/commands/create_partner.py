import json

from django.core.management.base import BaseCommand
from django.db import transaction

from partners import services


class Command(BaseCommand):
    help = (
        "Create a partner with its live and test-mode client credentials. The secrets are printed once and "
        "never stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--email", default="", help="Contact e-mail of the partner.")
        parser.add_argument(
            "--with-payment-methods", action="store_true", help="Attach a sandbox payout account and card."
        )
        parser.add_argument("--suspended", action="store_true", help="Create the partner suspended.")
        parser.add_argument("--json", action="store_true", help="Print one JSON line.")

    def handle(self, *args, **options):
        with transaction.atomic():
            issued = services.partner_create(
                name=options["name"], contact_email=options["email"], suspended=options["suspended"]
            )
            if options["with_payment_methods"]:
                from payouts.services.methods import payment_methods_create_sandbox

                payment_methods_create_sandbox(partner=issued.partner)
        result = {
            "partner_id": issued.partner.public_id,
            "client_id": issued.client_id,
            "client_secret": issued.client_secret,
            "test_client_id": issued.test_client_id,
            "test_client_secret": issued.test_client_secret,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"Partner {issued.partner.name} created.\n"
                f"  partner_id:    {result['partner_id']}\n"
                f"  client_id:     {result['client_id']}\n"
                f"  client_secret: {result['client_secret']}\n"
                f"  test_client_id:     {result['test_client_id']}\n"
                f"  test_client_secret: {result['test_client_secret']}\n"
                "The secrets are shown only now; store them safely."
            )
