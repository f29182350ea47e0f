from django.apps import AppConfig


class SandboxConfig(AppConfig):
    """The sandbox payment platform: a simulator of the external platform, with its own pages and records."""

    name = "payouts.sandbox"
    label = "sandbox"
    verbose_name = "Sandbox payment platform"
