"""Hooks of the live fuzzer's ``schemathesis run`` (tests/schema/test_live_fuzz.py starts it with
``SCHEMATHESIS_HOOKS`` naming this module).

- Real ids: about half the schema-valid cases address the live instance's own event, quote, order and
  webhook endpoint (``FUZZ_WORLD``, made by the test), so the 2xx paths are fuzzed, not only 404s.
- Idempotency-Keys stay unique: a generated key that is valid is replaced by a fresh one, so two different
  requests never meet under one key (a replay or IDEMPOTENCY_KEY_MISMATCH would hide what the request did).
- The checks of tests/schema/fuzzing.py (the envelope, and schemathesis' positive and negative data checks
  with the commented allow-list) are registered beside schemathesis' own.
- Every operation called is written to ``FUZZ_RECORD``: the test fails when one of the schema was never
  fuzzed.
"""

from __future__ import annotations

import json
import os
import uuid

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

import schemathesis  # noqa: E402

from tests.schema import fuzzing  # noqa: E402

WORLD = fuzzing.World(**json.loads(os.environ["FUZZ_WORLD"]))
RECORD = os.environ["FUZZ_RECORD"]


@schemathesis.hook
def map_case(context, case):
    if case.meta is not None:
        fuzzing.adopt_real_ids(case, WORLD)
    headers = case.headers or {}
    for name in [k for k in headers if k.lower() == "idempotency-key"]:
        if fuzzing.is_positive(case, "HEADER"):
            headers[name] = f"fuzz-{uuid.uuid4()}"
    return case


@schemathesis.hook
def after_call(context, case, response):
    with open(RECORD, "a") as record:
        record.write(f"{case.method.upper()} {case.operation.path} {response.status_code}\n")


@schemathesis.check
def envelope(ctx, response, case):
    fuzzing.check_envelope(ctx, response, case)


@schemathesis.check
def positive_data_acceptance_allowing_domain_rules(ctx, response, case):
    fuzzing.check_positive_data_acceptance(ctx, response, case)


@schemathesis.check
def negative_data_rejection_allowing_the_wire(ctx, response, case):
    fuzzing.check_negative_data_rejection(ctx, response, case)
