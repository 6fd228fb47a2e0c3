"""Content digests and keyed signatures of ledgers, so that a ledger read back can be trusted.

* Every :class:`~pymc_dp.accounting.LedgerEntry` has a **content digest**: SHA-256
  over the canonical JSON of all its fields (:func:`canonical_json`).
  :meth:`~pymc_dp.accounting.LedgerEntry.to_dict` writes it and
  :meth:`~pymc_dp.accounting.LedgerEntry.from_dict` checks it.
* A serialised ledger carries a **ledger digest**: SHA-256 over the canonical JSON
  of its format, version, neighbouring relation, budget and the digests of its
  entries in order (:func:`ledger_digest`). Entries cannot be edited, dropped,
  added or reordered, nor the budget or relation changed, without the digest
  changing.
* A digest detects accidental corruption and naive edits, but anyone can recompute
  it after an edit. A **keyed signature** (HMAC-SHA256 over the ledger digest with
  a secret key, :func:`sign`) detects deliberate edits by whoever does not hold
  the key.

Canonical JSON is ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=True, allow_nan=False)``: keys sorted, no whitespace, non-ASCII
characters escaped, floats written by ``repr`` (the shortest string that reads back
as the same float), so the same content always gives the same bytes whatever the
layout of the file it was read from.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Mapping, Sequence

__all__ = [
    "canonical_json",
    "content_digest",
    "ledger_digest",
    "sign",
    "verify_signature",
    "check_key",
    "SIGNATURE_ALGORITHM",
]

#: The keyed signature of a serialised ledger (stored under ``"signature"``).
SIGNATURE_ALGORITHM = "hmac-sha256"


def _canonical(value: Any) -> Any:
    """Plain JSON types only; a float stays a float (its JSON text is its ``repr``)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"cannot digest a value of type {type(value).__name__}: {value!r}")


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``.

    Parameters
    ----------
    value
        Plain JSON data: mappings with string keys, lists or tuples, strings, ints,
        finite floats, booleans and ``None``.

    Returns
    -------
    str
        ``json.dumps`` with sorted keys, the separators ``","`` and ``":"``, ASCII
        escapes and floats written by ``repr``.

    Raises
    ------
    TypeError
        For a value that is not plain JSON data.
    ValueError
        For a NaN or infinite float.

    Examples
    --------
    >>> canonical_json({"b": 1.0, "a": [1, "x"]})
    '{"a":[1,"x"],"b":1.0}'
    """
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def content_digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of ``value``, as 64 lowercase hex digits.

    Parameters
    ----------
    value
        Plain JSON data (see :func:`canonical_json`).

    Returns
    -------
    str
        The hex digest.
    """
    return hashlib.sha256(canonical_json(value).encode("ascii")).hexdigest()


def ledger_digest(
    format: str, version: int, neighbouring: str, budget: Mapping[str, Any] | None, entry_digests: Sequence[str]
) -> str:
    """The digest of a serialised ledger.

    Parameters
    ----------
    format, version
        The format marker and version number written with the ledger.
    neighbouring
        The ledger's neighbouring relation.
    budget
        The budget as written (``{"epsilon", "delta", "method"}``) or ``None``.
    entry_digests
        The content digest of every entry, in the ledger's order.

    Returns
    -------
    str
        SHA-256 (hex) of the canonical JSON of these five fields.
    """
    return content_digest(
        {
            "format": format,
            "version": version,
            "neighbouring": neighbouring,
            "budget": None if budget is None else dict(budget),
            "entries": list(entry_digests),
        }
    )


def check_key(key: bytes | str) -> bytes:
    """The signing key as bytes (a ``str`` is UTF-8 encoded); refuses an empty or non-text key.

    Parameters
    ----------
    key
        A secret key: ``bytes`` (or ``bytearray``) or ``str``.

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        If ``key`` is neither bytes nor str.
    ValueError
        If ``key`` is empty.
    """
    if isinstance(key, str):
        key = key.encode("utf-8")
    elif isinstance(key, (bytes, bytearray, memoryview)):
        key = bytes(key)
    else:
        raise TypeError(f"a ledger signing key must be bytes or str, got {type(key).__name__}.")
    if not key:
        raise ValueError("the ledger signing key is empty; an empty key signs nothing. Use a long random secret.")
    return key


def sign(key: bytes | str, digest: str) -> str:
    """HMAC-SHA256 of a ledger digest under ``key``, as hex.

    Parameters
    ----------
    key
        The secret key (see :func:`check_key`).
    digest
        The ledger digest (:func:`ledger_digest`).

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    return hmac.new(check_key(key), digest.encode("ascii"), hashlib.sha256).hexdigest()


def verify_signature(key: bytes | str, digest: str, signature: Any) -> bool:
    """Whether ``signature`` is the HMAC-SHA256 of ``digest`` under ``key`` (compared in constant time).

    Parameters
    ----------
    key
        The secret key (see :func:`check_key`).
    digest
        The ledger digest the signature should cover.
    signature
        The stored signature; anything that is not a string is not a valid signature.

    Returns
    -------
    bool
    """
    expected = sign(key, digest)
    if not isinstance(signature, str) or not signature.isascii():
        return False
    return hmac.compare_digest(expected, signature)
