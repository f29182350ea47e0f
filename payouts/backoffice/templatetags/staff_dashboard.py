"""``{% staff_dashboard %}``: the figures, charts and queues of ``payouts.backoffice.dashboard`` on the admin's index."""

from django import template

from ..dashboard import staff_dashboard as build_dashboard

register = template.Library()


@register.inclusion_tag("admin/staff_dashboard.html", takes_context=True)
def staff_dashboard(context) -> dict:
    request = context.get("request")
    # Only staff who may see orders get the business figures; the index stays usable for everyone else.
    allowed = request is not None and request.user.has_perm("orders.view_order")
    return {"dashboard": build_dashboard() if allowed else None}
