from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from .models import Event, Performer, Row, Section, Venue
        from .services.events import catalog_model_changed

        # Any write a partner could see in a catalog answer moves the catalog's version (catalog/cache.py).
        for model in (Venue, Performer, Event, Section, Row):
            post_save.connect(
                catalog_model_changed, sender=model, dispatch_uid=f"catalog-version-save-{model.__name__}"
            )
            post_delete.connect(
                catalog_model_changed, sender=model, dispatch_uid=f"catalog-version-delete-{model.__name__}"
            )
        m2m_changed.connect(
            catalog_model_changed, sender=Event.performers.through, dispatch_uid="catalog-version-performers"
        )
