"""The staff confirmation: the one page between a staff member's click and a change of state.

Every admin action and staff view that changes data goes through ``confirm``, the bulk actions of a list and
the buttons of a record's page alike:

- the permissions are checked on every request, the page's GET and the confirming POST (a forged POST: 403);
- the page lists the objects the change acts on, says what confirming does and asks for a reason (required:
  it goes into the history and the audit log), with any further question the change needs (a form);
- the change runs only on a POST that comes back confirmed with a valid form; staff then land on a GET (the
  record's page, or the list), so a reload repeats nothing;
- each page carries a single-use id the server issued (to this staff member, for this change of these
  objects) and recorded; the database consumes it once (a conditional UPDATE), so the same confirmation sent
  again (a double click, a second tab, the back button and "resubmit", a replayed form) is refused before it
  reaches the change, whatever the change is; a POST without a valid unused id (none, unknown, expired,
  another's) changes nothing and shows the page again, with a fresh id and a message saying why.

One template draws every confirmation: ``templates/admin/confirmation.html``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from .admin_permissions import require
from .confirmation_ids import Use, confirmation_issue, confirmation_use, scope_of

TEMPLATE = "admin/confirmation.html"
REASON_MAX_LENGTH = 255


class ConfirmationForm(forms.Form):
    """The reason every confirmation asks for; a change that needs more (a question, a message) adds fields."""

    reason = forms.CharField(
        max_length=REASON_MAX_LENGTH,
        widget=forms.TextInput(attrs={"size": 60}),
        error_messages={"required": "Give a reason: it is kept in the history."},
    )


class AcceptedForm(ConfirmationForm):
    """Tickets marked received: were they also accepted on the platform?"""

    accepted = forms.TypedChoiceField(
        label="Were the tickets accepted on the platform?",
        choices=(
            ("no", "No, not yet (the transfer is recorded as detected)"),
            ("yes", "Yes, accepted on the platform (recorded as accepted: the payout may start)"),
        ),
        coerce=lambda value: value == "yes",
        # Left out (a script posting the form's fields): not accepted.
        required=False,
        empty_value=False,
        initial="no",
        widget=forms.RadioSelect,
    )


INVALID_MESSAGE = (
    "This confirmation could not be checked (it was not sent from its page, it was opened too long ago, or it "
    "was issued for another change or another staff member): nothing was done. Check the page and confirm again."
)


def _scope(
    model_admin: ModelAdmin, permissions: Sequence[str], testid: str, objects: Sequence[Any], action: str
):
    opts = model_admin.model._meta
    return scope_of(opts.label_lower, testid, action, *permissions, keys=(obj.pk for obj in objects))


def confirm(
    request: HttpRequest,
    model_admin: ModelAdmin,
    *,
    permissions: Iterable[str],
    objects: Sequence[Any],
    describe: Callable[[Any], Sequence[Any]],
    columns: Sequence[str],
    title: str,
    submit: str,
    act: Callable[[dict], HttpResponse | None],
    effects: Sequence[str] = (),
    lead: str = "",
    reason_label: str = "Reason (kept in the history)",
    form_class: type[ConfirmationForm] = ConfirmationForm,
    initial: dict | None = None,
    testid: str = "confirm",
    back_url: str = "",
    done_url: str = "",
    action_url: str = "",
    record_label: str = "",
    arrives_by_post: bool = False,
) -> HttpResponse | None:
    """The confirmation of one change: the page, or the change once confirmed.

    ``objects`` are listed one row each (``describe(obj)``: the cells under ``columns``); ``act(cleaned_data)``
    makes the change and returns a response, or ``None`` to go to ``done_url`` (a list's action: ``None``
    lets the admin go back to the list). ``act`` raises ``ValidationError`` to refuse with the page shown again.
    A view whose button POSTs here (``arrives_by_post``) answers a GET by going back to ``back_url``;
    otherwise a GET shows the page. Posted from a list's action menu, the page carries the action and its
    selection along.
    """
    permissions = tuple(permissions)
    for permission in permissions:
        require(request, permission)
    scope = _scope(model_admin, permissions, testid, objects, request.POST.get("action", ""))
    opts = model_admin.model._meta
    changelist_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    back_url = back_url or changelist_url
    initial = dict(initial or {})
    if request.method != "POST":
        if arrives_by_post:
            messages.error(request, f"“{title}” starts from its button.")
            return HttpResponseRedirect(back_url)
        form = form_class(initial=initial)
    elif request.POST.get("confirmed") == "yes":
        form = form_class(request.POST, initial=initial)
        use = Use.INVALID
        if form.is_valid():
            use = confirmation_use(request.POST.get("confirmation_id", ""), user=request.user, scope=scope)
            if use is Use.USED:
                messages.warning(request, "This confirmation was sent already: nothing was done again.")
                return HttpResponseRedirect(done_url) if done_url else None
            if use is Use.INVALID:
                form.add_error(None, INVALID_MESSAGE)
        if use is Use.FIRST:
            try:
                response = act(form.cleaned_data)
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                if response is None and done_url:
                    return HttpResponseRedirect(done_url)
                return response
    else:  # the first POST: from a list's action menu or a record's button
        form = form_class(initial=initial)
    form.fields["reason"].label = reason_label
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "title": title,
        "lead": lead,
        "effects": effects,
        "columns": columns,
        "rows": [(obj.pk, describe(obj)) for obj in objects],
        "form": form,
        "submit": submit,
        "testid": testid,
        "action_url": action_url,
        "back_url": back_url,
        "changelist_url": changelist_url,
        "record_label": record_label,
        "action_name": request.POST.get("action", ""),
        "select_across": request.POST.get("select_across", "0"),
        "confirmation_id": confirmation_issue(user=request.user, scope=scope),
    }
    return TemplateResponse(request, TEMPLATE, context)


def staff_actor(request: HttpRequest) -> str:
    """The actor staff's changes are recorded under, in every history."""
    return f"staff:{request.user.get_username()}"
