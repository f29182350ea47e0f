"""The staff back office, at the top of the house because it spans every app: the staff dashboard on the
admin's index (``dashboard``, ``{% staff_dashboard %}``), the one registration of the order and partner admins
(``admin``), the partner portal's home (``portal_home``) and the commands ``create_partner`` and
``demo_setup``. A nested app of ``payouts`` (label ``backoffice``) so that Django finds its template tags and
commands; it has no models."""
