"""Settings of the bare project (bench/bare_project): no apps, no database, two middleware."""

SECRET_KEY = "bench-bare-project-" + "x" * 40
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "bench.bare_project.urls"
INSTALLED_APPS: list[str] = []
DATABASES: dict = {}
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
]
USE_TZ = True
