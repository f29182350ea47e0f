"""Named staff permissions (docs/staff-guide.md "Staff permissions and groups"): what the admin's actions, buttons and the views behind
their confirmation pages ask before they act."""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest


def staff_may(request: HttpRequest, permission: str) -> bool:
    """``permission`` is ``"app_label.codename"``; superusers have every one."""
    return request.user.is_active and request.user.is_staff and request.user.has_perm(permission)


def require(request: HttpRequest, permission: str) -> None:
    """Checked on every request of a staff view, the confirming POST included: a forged POST gets 403."""
    if not staff_may(request, permission):
        raise PermissionDenied
