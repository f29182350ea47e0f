"""A trigram index for the case-insensitive substring search on event names .

Django writes ``name__icontains`` as ``UPPER(name::text) LIKE UPPER('%…%')``; a GIN trigram index on the
same expression answers it without scanning every event. A PostgreSQL role that may not create the pg_trgm
extension simply goes without the index.
"""

import logging

from django.db import migrations, transaction

logger = logging.getLogger(__name__)

INDEX = "catalog_event_name_trgm"


def create_index(apps, schema_editor):
    connection = schema_editor.connection
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception:
        logger.warning("pg_trgm is not available; event name search runs without a trigram index")
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON catalog_event USING gin ((UPPER(name::text)) gin_trgm_ops)"
        )


def drop_index(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("catalog", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]
