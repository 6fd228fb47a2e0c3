"""Store a :class:`~pymc_dp.accounting.PrivacyLedger` on a trace and read it back.

Layout written by :func:`attach_ledger`
---------------------------------------
* ``attrs["pymc_dp_ledger"]`` (top level): the ledger as JSON (attrs must be
  strings or numbers). Convenient, but concatenating traces (:func:`concat`,
  ``az.concat``) keeps one trace's attrs, so it is only the fallback.
* a ``privacy`` group with one ``chain`` dimension (the posterior's chain
  coordinates), holding

  - ``ledger`` (chain,) string: the JSON ledger that covers that chain,
  - ``epsilon`` (chain,) float: its basic-composition total ε,
  - ``delta`` (chain,) float: its basic-composition total δ.

  Because the ledger lives on the ``chain`` dimension, :func:`concat` (or ``az.concat``
  on ArviZ < 1) along ``chain``
  of two separately released traces carries both ledgers along, and
  :func:`ledger` combines them (entries are unique by id, so a spend shared by
  both traces is counted once).

Concatenating along ``draw`` is refused for a trace with a ``privacy`` group (the
group has no ``draw`` dimension); concatenate along ``chain``, or
combine the ledgers with :meth:`~pymc_dp.accounting.PrivacyLedger.combine` and attach the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from typing import Any

import numpy as np
import xarray as xr

from ..accounting import PrivacyLedger
from .. import _compat

__all__ = ["attach_ledger", "ledger", "concat", "trace_digest", "MissingLedgerError", "LEDGER_ATTR", "PRIVACY_GROUP"]

#: Top-level attribute holding the ledger JSON.
LEDGER_ATTR = "pymc_dp_ledger"
#: Name of the group holding the per-chain ledgers.
PRIVACY_GROUP = "privacy"
#: Attribute naming the pymc_dp version that wrote a trace.
VERSION_ATTR = "pymc_dp_version"


class MissingLedgerError(LookupError):
    """The trace carries no pymc_dp privacy ledger."""


def _pymc_dp_version() -> str:
    from .. import __version__

    return str(__version__)


def _chain_coord(idata: Any) -> np.ndarray:
    """The chain coordinate values of the posterior (else of any group with chains, else [0])."""
    names = _compat.group_names(idata)
    ordered = [g for g in ("posterior", "sample_stats", PRIVACY_GROUP) if g in names]
    ordered += [g for g in names if g not in ordered]
    for name in ordered:
        ds = _compat.get_group(idata, name)
        if ds is not None and "chain" in ds.dims:
            if "chain" in ds.coords:
                return np.asarray(ds["chain"].values)
            return np.arange(ds.sizes["chain"])
    return np.arange(1)


def _as_strings(value: Any) -> list[str]:
    """Flatten an attr or variable value (str, bytes, list or array of them) into strings."""
    if value is None:
        return []
    if isinstance(value, bytes):
        return [value.decode("utf-8")]
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    for item in np.asarray(value, dtype=object).ravel():
        out.extend(_as_strings(item))
    return out


def _unique(texts: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for t in texts:
        if t and t not in seen:
            seen[t] = None
    return list(seen)


def _combine(ledgers: list[PrivacyLedger]) -> PrivacyLedger:
    """Union of ledgers by entry id; keeps the budget when they all agree on it."""
    if len(ledgers) == 1:
        return ledgers[0]
    budgets = {repr(lg.budget) for lg in ledgers}
    budget = ledgers[0].budget if len(budgets) == 1 else None
    return PrivacyLedger.combine(ledgers, budget=budget)


def _per_chain_texts(idata: Any) -> list[str] | None:
    """Per-chain ledger JSON of an existing privacy group (None if there is none)."""
    ds = _compat.get_group(idata, PRIVACY_GROUP)
    if ds is None or "ledger" not in ds.data_vars:
        return None
    return _as_strings(ds["ledger"].values)


def trace_digest(idata: Any) -> str:
    """SHA-256 over every variable of every group of a trace but the ledger's own.

    Names, dimensions, shapes and values of data variables and coordinates (numbers
    by their bytes as float64 or int64, anything else by its text), groups and
    variables in sorted order; attributes
    are left out (they hold the ledger and timestamps). A signed ledger is bound to
    this digest, so it cannot be copied onto another release. Stable across
    ``to_netcdf``/``from_netcdf``.
    """
    import hashlib

    h = hashlib.sha256()
    for group in sorted(_compat.group_names(idata)):
        if group == PRIVACY_GROUP:
            continue
        ds = _compat.get_group(idata, group)
        if ds is None:
            continue
        names = [("", n) for n in sorted(map(str, ds.data_vars))] + [("coords/", n) for n in sorted(map(str, ds.coords))]
        for prefix, name in names:
            arr = np.asarray(ds[name].values)
            name = prefix + name
            dims = tuple(ds[name.removeprefix("coords/")].dims)
            h.update(f"{group}/{name}{dims}{arr.shape}".encode())
            if arr.dtype.kind in "biu":
                h.update(np.ascontiguousarray(arr, dtype=np.int64).tobytes())
            elif arr.dtype.kind == "f":
                h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
            else:
                h.update(repr(arr.tolist()).encode())
    return h.hexdigest()


def _privacy_group(per_chain: list[PrivacyLedger], chains: np.ndarray, key: bytes | str | None,
                   bound_to: str | None) -> xr.Dataset:
    texts = [lg.to_json(key=key, bound_to=bound_to) for lg in per_chain]
    totals = [lg.total("basic") for lg in per_chain]
    ds = xr.Dataset(
        {
            "ledger": ("chain", np.array(texts, dtype=object)),
            "epsilon": ("chain", np.array([t.epsilon for t in totals], dtype=np.float64)),
            "delta": ("chain", np.array([t.delta for t in totals], dtype=np.float64)),
        },
        coords={"chain": chains},
        attrs={
            VERSION_ATTR: _pymc_dp_version(),
            "description": "pymc_dp privacy ledger per chain (JSON) and its basic-composition total",
        },
    )
    ds["epsilon"].attrs["long_name"] = "total epsilon (basic composition)"
    ds["delta"].attrs["long_name"] = "total delta (basic composition)"
    return ds


def attach_ledger(idata: Any, ledger: PrivacyLedger, *, key: bytes | str | None = None) -> Any:
    """Return a copy of ``idata`` that carries ``ledger``.

    The ledger is stored twice: as JSON in ``attrs["pymc_dp_ledger"]`` and as a
    ``privacy`` group with one JSON string, total ε and total δ per chain (see the
    module docstring), so that :func:`concat` along ``chain`` keeps every ledger.
    If ``idata`` already carries a ledger, the attached ledger is the union of the
    old and the new one (by entry id): attaching never forgets a recorded spend.

    Parameters
    ----------
    idata
        An ``arviz.InferenceData`` (or ``xarray.DataTree``). Not modified.
    ledger
        The ledger of every privacy spend behind this trace.
    key
        A curator's secret key: every stored copy of the ledger is signed with it
        (HMAC-SHA256), bound to the trace's content (:func:`trace_digest`), so that a
        third party holding the key can check with ``pmdp.ledger(trace, key=...)``
        that nobody altered the ledger or copied it onto another release. Sign last:
        :func:`concat` and other changes of the trace void the signature (attach
        again with the key). Without a key the
        copies still carry content digests, which catch edits by anyone who did not
        recompute them.

    Returns
    -------
    InferenceData or DataTree
        A new trace object of the same type; groups are shallow copies.

    Raises
    ------
    TypeError
        If ``ledger`` is not a :class:`~pymc_dp.accounting.PrivacyLedger` or
        ``idata`` is not a trace.
    """
    if not isinstance(ledger, PrivacyLedger):
        raise TypeError(f"ledger must be a pymc_dp PrivacyLedger, got {type(ledger).__name__}.")
    return _attach(idata, ledger, key)


def _attach(idata: Any, ledger: PrivacyLedger | None, key: bytes | str | None = None) -> Any:
    """Rebuild the privacy group and attr from what ``idata`` holds, plus ``ledger`` if given.

    Returns ``idata`` itself when there is nothing to attach.
    """
    chains = _chain_coord(idata)
    old_texts = _per_chain_texts(idata)
    if old_texts is not None and len(old_texts) == len(chains) and all(old_texts):
        old_per_chain = [_parse(t) for t in old_texts]
    else:
        old = _read(idata)
        old_per_chain = None if old is None else [old] * len(chains)
    if old_per_chain is None and ledger is None:
        return idata
    if old_per_chain is None:
        per_chain = [ledger] * len(chains)
    elif ledger is None:
        per_chain = old_per_chain
    else:
        per_chain = [_combine([lg, ledger]) for lg in old_per_chain]
    everything = _combine(_dedupe_ledgers(per_chain))
    bound_to = None if key is None else trace_digest(idata)
    out = _compat.with_group(idata, PRIVACY_GROUP, _privacy_group(per_chain, chains, key, bound_to))
    attrs = _compat.get_attrs(out)
    attrs[LEDGER_ATTR] = everything.to_json(key=key, bound_to=bound_to)
    attrs[VERSION_ATTR] = _pymc_dp_version()
    return _compat.with_attrs(out, attrs)


def _dedupe_ledgers(ledgers: list[PrivacyLedger]) -> list[PrivacyLedger]:
    by_text: dict[str, PrivacyLedger] = {}
    for lg in ledgers:
        by_text.setdefault(lg.to_json(), lg)
    return list(by_text.values())


def _check_totals(idata: Any) -> None:
    """The privacy group's per-chain ε and δ must be its ledgers' totals (they are only a display of them)."""
    ds = _compat.get_group(idata, PRIVACY_GROUP)
    if ds is None or "ledger" not in ds.data_vars or "epsilon" not in ds.data_vars:
        return
    for text, eps, delta in zip(_as_strings(ds["ledger"].values), np.ravel(ds["epsilon"].values),
                                np.ravel(ds["delta"].values) if "delta" in ds.data_vars else np.zeros(ds.sizes.get("chain", 1))):
        total = _parse(text).total("basic")
        if not (np.isclose(eps, total.epsilon, rtol=1e-12, atol=0) and np.isclose(delta, total.delta, rtol=1e-12, atol=1e-300)):
            raise ValueError(
                "the privacy group's per-chain epsilon/delta do not match its ledgers' totals: the trace was edited "
                "after it was written. Do not trust it."
            )


def _read(idata: Any, key: bytes | str | None = None) -> PrivacyLedger | None:
    _check_totals(idata)
    texts = _per_chain_texts(idata) or []
    texts += _as_strings(_compat.get_attrs(idata).get(LEDGER_ATTR))
    texts = _unique(texts)
    if not texts:
        return None
    bound_to = None if key is None else trace_digest(idata)
    parsed = [_parse(t, key, bound_to) for t in texts]
    try:
        return _combine(parsed)
    except ValueError as err:
        raise ValueError(f"the privacy ledgers stored on this trace contradict each other: {err}") from None


def _parse(text: str, key: bytes | str | None = None, bound_to: str | None = None) -> PrivacyLedger:
    try:
        return PrivacyLedger.from_json(text, key=key, bound_to=bound_to)
    except (ValueError, TypeError, KeyError) as err:
        raise ValueError(f"the privacy ledger stored on this trace cannot be trusted: {err}") from None


def ledger(idata: Any, *, key: bytes | str | None = None) -> PrivacyLedger:
    """The privacy ledger of a trace produced (or released) by pymc_dp.

    Reads the per-chain ledgers of the ``privacy`` group and the
    ``pymc_dp_ledger`` attribute, and returns their union by entry id
    (:meth:`~pymc_dp.accounting.PrivacyLedger.combine`): after :func:`concat` of two
    releases, the result accounts for both; a spend stored in both is counted once.

    Parameters
    ----------
    idata
        An ``arviz.InferenceData`` / ``xarray.DataTree``, or the path of a trace
        saved with ``to_netcdf``.
    key
        The curator's secret key: every stored copy of the ledger must carry a valid
        signature under it, made for this trace's content (see :func:`attach_ledger`). Without a key, every copy's
        content digests are still checked.

    Returns
    -------
    PrivacyLedger
        The stored ledger (with its budget when every stored copy agrees on it).

    Raises
    ------
    MissingLedgerError
        If the trace carries no ledger.
    ValueError
        If a stored ledger cannot be parsed, fails its digest or signature check,
        or contradicts another stored copy (an entry altered in one of them).
    """
    if isinstance(idata, (str, PathLike)):
        idata = _compat.load(idata)
    found = _read(idata, key)
    if found is None:
        raise MissingLedgerError(
            "this trace was not produced by pymc_dp: it has no privacy ledger (no 'privacy' group and "
            f"no '{LEDGER_ATTR}' attribute). Sample with pmdp.sample(...) or attach one with "
            "pmdp.trace.attach_ledger(idata, ledger)."
        )
    return found


def concat(traces: Iterable[Any], dim: str = "chain") -> Any:
    """Concatenate released traces along ``chain`` and keep every ledger.

    ``az.concat(..., dim="chain")`` of ArviZ < 1, on whichever trace type this ArviZ
    uses (ArviZ 1 has no ``concat``): groups with a ``chain`` dimension, the ``privacy``
    group among them, are concatenated, so :func:`ledger` of the result is the union
    of the traces' ledgers (a spend stored in several is counted once).

    Parameters
    ----------
    traces
        Traces released by pymc_dp (``InferenceData`` or ``xarray.DataTree``), with
        distinct chain coordinates.
    dim
        ``"chain"`` (the default). Concatenating along ``draw`` is refused for traces
        with a ledger: combine the ledgers with
        :meth:`~pymc_dp.accounting.PrivacyLedger.combine` and attach the result instead.

    Returns
    -------
    InferenceData or DataTree
        The concatenated trace, its top-level ledger attribute rebuilt from every ledger.

    Raises
    ------
    ValueError
        If ``dim`` is not ``"chain"`` and a trace carries a ledger, or no trace is given.
    """
    traces = list(traces)
    if not traces:
        raise ValueError("concat needs at least one trace.")
    if dim != "chain" and any(_read(t) is not None for t in traces):
        raise ValueError(
            f"traces carrying a privacy ledger concatenate along 'chain' only (got dim={dim!r}): the ledger "
            "lives on the chain dimension. Combine the ledgers with PrivacyLedger.combine and attach the result."
        )
    inputs = [lg for lg in (_read(t) for t in traces) if lg is not None]
    out = _compat.concat(traces, dim=dim)
    if not inputs:
        return out
    joined = _read(out)
    wanted = _combine(inputs)
    if joined is None or {e.id for e in wanted.entries} - {e.id for e in joined.entries}:
        # A trace's ledger did not come through the group-wise join (e.g. it had no
        # privacy group, only the attribute): attach the union so that no spend is lost.
        return _attach(out, wanted)
    return _attach(out, None)
