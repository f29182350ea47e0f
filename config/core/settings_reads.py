"""A setting read at the cost of an attribute.

``django.conf.settings`` is a ``LazySettings``. Django keeps each setting in the object's own dictionary after its
first read, but every read still passes through ``LazyObject.__getattribute__`` first: a Python method that looks
the value up, then looks for ``_mask_wrapped`` on it (the mark of ``LazyObject``'s proxy methods, so that
``hasattr(lazy, "__getitem__")`` answers for the wrapped object) before it returns it. A request reads settings
20 to 40 times (``timezone.now()`` reads ``USE_TZ``, ``request.body`` the upload limits, the API its rate limit and
keys), each read about 0.19 µs against 0.02 µs for a plain attribute on this machine.

:func:`install` gives ``LazySettings`` ``object.__getattribute__``: a setting already read is answered from the
dictionary without Python code, and one not read yet still reaches ``LazySettings.__getattr__``, which loads it (and
raises ``AttributeError`` for a setting that does not exist), as before. Changing a setting is unchanged:
``override_settings`` and assignments go through ``__setattr__`` and ``__delattr__``, which empty the dictionary (or
drop the one name) so that the next read loads the new value. Only the masking of proxy methods is given up, which
settings never need: they are not a container, a number or a string.
"""

from django.conf import LazySettings

_DJANGO_GETATTRIBUTE = LazySettings.__getattribute__


def install() -> None:
    """Read settings through the object's dictionary (once the apps are ready; idempotent)."""
    LazySettings.__getattribute__ = object.__getattribute__


def uninstall() -> None:
    """Django's own reads again (a test compares the two)."""
    LazySettings.__getattribute__ = _DJANGO_GETATTRIBUTE
