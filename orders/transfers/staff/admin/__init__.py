"""Transfer detection in the admin, in one package: the case queue and its pages (``cases``), the case
actions (``actions``), how a case shows its mail and evidence (``display``), the read-only messages and
evidence (``records``), the order page's transfer panel and bulk acceptance (``order``, added to the order's
admin through ``orders.extensions``) and the platform templates' pages (``platform_templates``).

``TransfersConfig.ready()`` imports this package, which registers the models' admin pages."""

from . import cases  # noqa: F401  (registers the transfer models' admin pages)
