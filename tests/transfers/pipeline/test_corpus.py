"""Every captured e-mail of the corpus gives exactly its expected parse, match and decision, and no mismatch
is ever received automatically (``make transfer-corpus``)."""

import json
from pathlib import Path

import pytest

from orders.transfers.testing.corpus import corpus_run, corpus_summary, main

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "transfer_mail"
RESULTS = {(r.platform, r.name): r for r in corpus_run(CORPUS)}
KINDS_COVERED = {"transfer_offer", "transfer_accepted", "transfer_canceled"}


@pytest.mark.parametrize("key", sorted(RESULTS), ids=lambda k: f"{k[0]}/{k[1]}")
def test_fixture_gives_its_expected_result(key):
    result = RESULTS[key]
    assert result.expected, f"{key} has no expected result"
    assert result.as_expected() == result.expected
    # A person's reading of the message agrees with the decision.
    if result.truth == "mismatch":
        assert result.decision == "mismatch"
    elif result.truth == "unparsed":
        assert result.decision == "unparsed"
    else:
        assert result.decision in ("received", "partial", "transfer_accepted", "transfer_canceled")


def test_corpus_covers_the_formats_and_never_receives_a_mismatch(capsys):
    names = {name for _, name in RESULTS}
    for needed in (
        "offer-1-ticket",
        "offer-2-tickets",
        "offer-4-tickets",
        "offer-general-admission",
        "series-per-ticket-1",
        "offer-html-only",
        "offer-quoted-printable",
        "offer-base64",
        "offer-non-ascii-names",
    ):
        assert f"{needed}.eml" in names
    assert {r.parse["kind"] for r in RESULTS.values() if r.parse} == KINDS_COVERED
    raw = {name: (CORPUS / platform / name).read_bytes() for platform, name in RESULTS}
    assert b"Content-Transfer-Encoding: quoted-printable" in raw["offer-quoted-printable.eml"]
    assert b"Content-Transfer-Encoding: base64" in raw["offer-base64.eml"]
    assert b"text/plain" not in raw["offer-html-only.eml"]
    summary = corpus_summary(list(RESULTS.values()))
    assert summary["sandbox"]["mismatches_auto_received"] == 0
    assert summary["sandbox"]["messages"] == len(RESULTS)
    assert main([str(CORPUS)]) == 0
    out = capsys.readouterr().out
    assert "mismatches auto-received" in out and out.splitlines()[1].split()[0] == "sandbox"


def test_a_fixture_whose_result_changed_fails_the_run(tmp_path):
    folder = tmp_path / "sandbox"
    folder.mkdir()
    source = CORPUS / "sandbox"
    (folder / "a.eml").write_bytes((source / "offer-2-tickets.eml").read_bytes())
    meta = json.loads((source / "offer-2-tickets.json").read_text())
    meta["expected"]["match"]["matched"] = False
    (folder / "a.json").write_text(json.dumps(meta))
    assert main([str(tmp_path)]) == 1
