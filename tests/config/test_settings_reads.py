"""Settings read through the object's dictionary (config/core/settings_reads.py): installed with the apps, and every
way a setting is read, changed, overridden and removed answers as Django's own reads do."""

import pytest
from django.conf import LazySettings, settings
from django.test import override_settings
from django.utils import timezone

from config.core import settings_reads


def test_installed_with_the_apps():
    assert LazySettings.__getattribute__ is object.__getattribute__


@pytest.fixture(params=["dictionary", "django"])
def reads(request):
    """Each test runs with this module's reads and again with Django's, which must answer alike."""
    if request.param == "django":
        settings_reads.uninstall()
    yield request.param
    settings_reads.install()


def test_a_setting_read_twice_answers_from_the_dictionary(reads):
    first = settings.RATE_LIMIT_PER_MINUTE
    assert "RATE_LIMIT_PER_MINUTE" in settings.__dict__
    assert first == settings.RATE_LIMIT_PER_MINUTE


def test_override_settings_is_seen_and_undone(reads):
    before = settings.RATE_LIMIT_PER_MINUTE
    with override_settings(RATE_LIMIT_PER_MINUTE=before + 7):
        assert before + 7 == settings.RATE_LIMIT_PER_MINUTE
        with override_settings(RATE_LIMIT_PER_MINUTE=3):
            assert settings.RATE_LIMIT_PER_MINUTE == 3
        assert before + 7 == settings.RATE_LIMIT_PER_MINUTE
    assert before == settings.RATE_LIMIT_PER_MINUTE


def test_django_reads_the_override_too(reads):
    """``timezone.now()`` reads USE_TZ on every call: an aware instant, then a naive one under the override."""
    assert timezone.is_aware(timezone.now())
    with override_settings(USE_TZ=False):
        assert timezone.is_naive(timezone.now())
    assert timezone.is_aware(timezone.now())


def test_assignment_and_deletion(reads):
    settings.SETTINGS_READS_PROBE = "first"
    try:
        assert settings.SETTINGS_READS_PROBE == "first"
        settings.SETTINGS_READS_PROBE = "second"
        assert settings.SETTINGS_READS_PROBE == "second"
    finally:
        del settings.SETTINGS_READS_PROBE
    assert not hasattr(settings, "SETTINGS_READS_PROBE")


def test_a_setting_that_does_not_exist(reads):
    with pytest.raises(AttributeError):
        settings.NO_SUCH_SETTING_ANYWHERE  # noqa: B018 - the read is the test
    assert getattr(settings, "NO_SUCH_SETTING_ANYWHERE", "default") == "default"


def test_the_settings_object_as_django_shows_it(reads):
    assert settings.configured
    assert isinstance(settings, LazySettings)
    assert settings.__class__ is type(settings._wrapped)  # LazyObject's __class__ is the wrapped object's
    # A method of the wrapped object, reached through __getattr__ as before.
    assert settings.is_overridden("RATE_LIMIT_PER_MINUTE")
