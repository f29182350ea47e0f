from django.conf import settings
from django.db import models


class StaffConfirmation(models.Model):
    """One staff confirmation page shown (config/core/confirmation.py): the single-use id it carries, issued by
    the server to one staff member for one change of given objects, and consumed once by the database."""

    id = models.CharField(primary_key=True, max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # A digest of what it was issued for: the model, the action, its permissions and the objects' keys.
    scope = models.CharField(max_length=64)
    issued_at = models.DateTimeField(db_index=True)
    consumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        default_permissions = ()

    def __str__(self) -> str:
        return f"confirmation {self.pk[:8]}… ({'used' if self.consumed_at else 'unused'})"
