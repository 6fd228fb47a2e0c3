"""A ledger read back from a file is checked, not trusted.

An audit edited an entry of a saved ledger from ε = 1 to 0.001 and it read back
silently, and concatenating traces whose copies of one entry differed kept whichever
came first. Every entry and every serialised ledger now carries a content digest
checked on read; conflicting copies of one entry are refused; a curator can sign a
ledger with a secret key (HMAC-SHA256) and a third party verify it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

from pymc_dp import _compat
from pymc_dp.accounting import Budget, PrivacyLedger
from pymc_dp.trace import attach_ledger, concat, ledger

KEY = b"curator-secret-0123456789"


def _ledger() -> PrivacyLedger:
    lg = PrivacyLedger(budget=Budget(epsilon=3.0))
    lg.spend("laplace", 1.0, touched="y:sum")
    lg.spend("laplace", 0.5, touched="y:count", count=2)
    return lg


def _edit(text: str, edit) -> str:
    data = json.loads(text)
    edit(data)
    return json.dumps(data)


def _set_epsilon(data, value=0.001):
    data["entries"][0]["epsilon"] = value


EDITS = {
    "an entry's epsilon": _set_epsilon,
    "an entry's count": lambda d: d["entries"][1].__setitem__("count", 1),
    "an entry's mechanism": lambda d: d["entries"][0].__setitem__("mechanism", "gaussian"),
    "an entry dropped": lambda d: d["entries"].pop(0),
    "entries reordered": lambda d: d["entries"].reverse(),
    "the budget": lambda d: d["budget"].__setitem__("epsilon", 100.0),
    "the relation": lambda d: d.__setitem__("neighbouring", "add_remove"),
}


@pytest.mark.parametrize("what", sorted(EDITS))
def test_an_edited_ledger_is_refused_on_read(what):
    lg = _ledger()
    text = lg.to_json()
    assert PrivacyLedger.from_json(text) == lg  # reads back untouched
    with pytest.raises(ValueError, match="altered"):
        PrivacyLedger.from_json(_edit(text, EDITS[what]))


def test_an_entry_edited_and_its_digest_recomputed_is_caught_by_the_ledger_digest():
    lg = _ledger()
    data = lg.to_dict()
    data["entries"][0]["epsilon"] = 0.001
    entry = {k: v for k, v in data["entries"][0].items() if k != "digest"}
    from pymc_dp.accounting.integrity import content_digest

    data["entries"][0]["digest"] = content_digest(entry)
    with pytest.raises(ValueError, match="digest does not match"):
        PrivacyLedger.from_dict(data)


def test_a_signed_ledger_verifies_with_its_key_and_only_with_it():
    lg = _ledger()
    text = lg.to_json(key=KEY)
    assert PrivacyLedger.from_json(text, key=KEY) == lg
    assert PrivacyLedger.from_json(text) == lg  # digests checked, signature not required
    with pytest.raises(ValueError, match="does not verify"):
        PrivacyLedger.from_json(text, key=b"another key")
    with pytest.raises(ValueError, match="not signed"):
        PrivacyLedger.from_json(lg.to_json(), key=KEY)


def test_an_edit_with_every_digest_recomputed_fails_the_signature():
    """Whoever edits without the key can rebuild every digest; the signature still fails."""
    lg = _ledger()
    forged = PrivacyLedger(budget=lg.budget)
    for e in lg.entries:
        if e.touched == "y:sum":
            e = type(e).from_dict({**{k: v for k, v in e.to_dict().items() if k != "digest"}, "epsilon": 0.001})
        forged.record(e)
    data = forged.to_dict()
    data["signature"] = json.loads(lg.to_json(key=KEY))["signature"]
    with pytest.raises(ValueError, match="does not verify"):
        PrivacyLedger.from_dict(data, key=KEY)


def test_version_1_ledgers_read_with_a_warning_and_are_refused_under_a_key():
    lg = _ledger()
    data = lg.to_dict()
    data["version"] = 1
    del data["digest"]
    for e in data["entries"]:
        del e["digest"]
    with pytest.warns(UserWarning, match="cannot be verified"):
        assert PrivacyLedger.from_dict(data) == lg
    with pytest.raises(ValueError, match="version 1"):
        PrivacyLedger.from_dict(data, key=KEY)


def test_combine_refuses_copies_of_one_entry_that_disagree():
    lg = _ledger()
    altered = PrivacyLedger.from_json(lg.to_json())
    e = altered.entries[0]
    data = {k: v for k, v in e.to_dict().items() if k != "digest"}
    data["epsilon"] = 0.001
    tampered = PrivacyLedger()
    tampered.record(type(e).from_dict(data))
    with pytest.raises(ValueError, match="disagree"):
        PrivacyLedger.combine([lg, tampered])
    with pytest.raises(ValueError, match="disagree"):
        PrivacyLedger.combine([tampered, lg])


def test_combine_keeps_the_larger_count_of_a_repeated_entry():
    a = PrivacyLedger()
    e = a.spend("gibbs", 0.1, touched="z")
    b = PrivacyLedger.from_json(a.to_json())
    b.repeat(e.id, 4)
    assert PrivacyLedger.combine([a, b])[e.id].count == 5
    assert PrivacyLedger.combine([b, a])[e.id].count == 5


# --------------------------------------------------------------------------- on traces


@pytest.fixture
def traces():
    """A one-chain trace with the given chain number."""

    def one(chain):
        posterior = xr.Dataset(
            {"mu": (("chain", "draw"), np.zeros((1, 5)))}, coords={"chain": [chain], "draw": np.arange(5)}
        )
        return _compat.new_trace({"posterior": posterior})

    return one


def _tamper_attr(idata, edit):
    attrs = _compat.get_attrs(idata)
    attrs["pymc_dp_ledger"] = _edit(attrs["pymc_dp_ledger"], edit)
    return _compat.with_attrs(idata, attrs)


def test_a_trace_whose_ledger_was_edited_is_refused(traces, tmp_path):
    idata = attach_ledger(traces(0), _ledger())
    with pytest.raises(ValueError, match="cannot be trusted"):
        ledger(_tamper_attr(idata, _set_epsilon))


def test_concat_of_traces_with_conflicting_copies_of_an_entry_is_refused(traces):
    lg = _ledger()
    first = attach_ledger(traces(0), lg)
    e = lg.entries[0]
    data = {k: v for k, v in e.to_dict().items() if k != "digest"}
    data["epsilon"] = 0.001
    cheap = PrivacyLedger(budget=lg.budget)
    cheap.record(type(e).from_dict(data))
    second = attach_ledger(traces(1), cheap)
    with pytest.raises(ValueError, match="disagree"):
        ledger(concat([first, second]))


def test_signed_trace_ledger_round_trips_and_the_cli_checks_the_key(traces, tmp_path):
    lg = _ledger()
    idata = attach_ledger(traces(0), lg, key=KEY)
    assert ledger(idata, key=KEY) == lg
    with pytest.raises(ValueError, match="does not verify"):
        ledger(idata, key=b"wrong")
    path = tmp_path / "t.nc"
    _compat.save(idata, path)
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY + b"\n")
    ok = subprocess.run([sys.executable, "-m", "pymc_dp.cli", "ledger", str(path), "--key-file", str(key_file)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "signature verified" in ok.stdout
    key_file.write_bytes(b"wrong")
    bad = subprocess.run([sys.executable, "-m", "pymc_dp.cli", "ledger", str(path), "--key-file", str(key_file)],
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "does not verify" in bad.stderr


def test_a_signed_ledger_copied_onto_another_release_is_refused(traces):
    cheap, dear = PrivacyLedger(), PrivacyLedger()
    cheap.spend("laplace", 0.1, touched="y")
    dear.spend("laplace", 5.0, touched="y")
    a = attach_ledger(traces(0), cheap, key=KEY)
    b_posterior = _compat.get_group(traces(0), "posterior").copy()
    b_posterior["mu"] = b_posterior["mu"] + 1.0  # another release
    b = attach_ledger(_compat.new_trace({"posterior": b_posterior}), dear, key=KEY)
    assert ledger(b, key=KEY) == dear
    replayed = _compat.with_group(b, "privacy", _compat.get_group(a, "privacy"))
    replayed = _compat.with_attrs(replayed, _compat.get_attrs(a))
    with pytest.raises(ValueError, match="made for another release"):
        ledger(replayed, key=KEY)


def test_the_per_chain_totals_and_the_coordinates_are_covered_too(traces):
    lg = _ledger()
    signed = attach_ledger(traces(0), lg, key=KEY)
    privacy = _compat.get_group(signed, "privacy").copy()
    privacy["epsilon"] = privacy["epsilon"] * 0 + 0.001
    with pytest.raises(ValueError, match="do not match its ledgers' totals"):
        ledger(_compat.with_group(signed, "privacy", privacy))
    posterior = _compat.get_group(signed, "posterior").assign_coords(draw=np.arange(5)[::-1])
    with pytest.raises(ValueError, match="made for another release"):
        ledger(_compat.with_group(signed, "posterior", posterior), key=KEY)
