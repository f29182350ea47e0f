# Test-mode credentials (docs/partners/test-mode.md "Test mode") and the mode of each token session.

import django.db.models.deletion
import partners.models
from django.db import migrations, models


def provision_test_credentials(apps, schema_editor):
    """Every existing partner gets a test-mode client_id now. Its secret is random and thrown away: nobody
    knows it, so the pair works only once the partner rotates it (portal, admin or ``rotate_credentials``),
    which shows the new secret once, exactly as for a new partner."""
    import hashlib
    import secrets

    from config.core.ids import new_public_id

    Partner = apps.get_model("partners", "Partner")
    PartnerTestCredential = apps.get_model("partners", "PartnerTestCredential")
    missing = Partner.objects.filter(test_credential__isnull=True).values_list("pk", flat=True)
    PartnerTestCredential.objects.bulk_create(
        [
            PartnerTestCredential(
                partner_id=pk,
                client_id=new_public_id("cli_test", 24),
                secret_digest=hashlib.sha256(secrets.token_bytes(32)).hexdigest(),
                secret_last4="",
            )
            for pk in missing.iterator()
        ],
        batch_size=500,
    )


class Migration(migrations.Migration):

    dependencies = [
        ('partners', '0003_partner_time_zone'),
    ]

    operations = [
        migrations.AddField(
            model_name='tokensession',
            name='livemode',
            field=models.BooleanField(default=True),
        ),
        migrations.CreateModel(
            name='PartnerTestCredential',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('secret_digest', models.CharField(editable=False, max_length=64)),
                ('secret_last4', models.CharField(editable=False, help_text='Last 4 characters, to tell secrets apart.', max_length=4)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('rotated_at', models.DateTimeField(blank=True, null=True)),
                ('client_id', models.CharField(default=partners.models.new_test_client_id, editable=False, max_length=40, unique=True)),
                ('partner', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='test_credential', to='partners.partner')),
            ],
            options={
                'abstract': False,
            },
        ),
        migrations.RunPython(provision_test_credentials, migrations.RunPython.noop, elidable=True),
    ]
