"""Two hosts of the Procfile shape (`make test-hosts`, about three minutes): outside `make test`'s run, which
leaves this folder out unless TEST_HOSTS=1 (what `make test-hosts` sets)."""

import os

from tests.ops.conftest import creds, row  # noqa: F401 - the operators' fixtures

collect_ignore_glob = [] if os.environ.get("TEST_HOSTS") == "1" else ["test_*.py"]
