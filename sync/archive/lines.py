"""An archive file's lines, written as Convex writes them, so that both servers' files hold the same
bytes (contracts/archive_week). Pure, no I/O.

Convex cannot write the hub's way: it holds every number as a float64 (it cannot know 1 from 1.0),
and its values cross every function boundary with their keys sorted. So the hub writes as Convex
does (cloud_functions/lib/archiveFormat.ts, its ``encodeLines``):

- numbers as JavaScript's ``JSON.stringify`` writes them (``js_number``): 1.0 is ``1``, 1e-06 is
  ``0.000001``, 1.5e-07 is ``1.5e-7``, 1e+21 stays ``1e+21``, -0.0 is ``0``;
- every object's keys in Convex's order (``js_key_order``): sorted by UTF-16 code unit, as
  convex/values' ``convexToJson`` sorts them, then as a JavaScript object holds them, keys that
  are array indexes ("2", "10") first, in numeric order;
- a metadata object Convex cannot carry as an object (``carried``: a key not printable ASCII,
  starting with "$" or longer than 1024; an integral number beyond 2^53, which a float64 may not
  hold exactly) as Convex keeps it, JSON text: ``"metadata":null``, and after the documented
  fields ``"metadataJson"``, the text the daemon pushes (``canonical_json``; Convex stores it as
  given). Reading a line folds it back (``exported_form``), losslessly.

A line read back gives the same values as the record written; an old hub file (``1.0``, keys in
the agent's order) reads as before, and is written the new way when its week is next rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from sync.episode import EXPORT_FIELDS, canonical_json, parse_json

# Number.MAX_SAFE_INTEGER: every integer up to it is exact in a float64.
SAFE_INTEGER = 2**53 - 1
# What convex/values refuses in a field name: outside printable ASCII, a leading "$", over 1024.
_FIELD_NAME = re.compile(r"[\x20-\x7e]{0,1024}")
# A JavaScript array index: a canonical decimal below 2^32 - 1.
_ARRAY_INDEX_LIMIT = 2**32 - 1
TEXT_FIELD = "metadataJson"


def js_number(value: float) -> str:
    """JavaScript's Number::toString of a float64 (ECMA-262 6.1.6.1.20), from the shortest digits
    that read back as it (Python's ``repr`` gives the same ones JavaScript does)."""
    if value == 0:
        return "0"  # -0 too
    if value < 0:
        return "-" + js_number(-value)
    mantissa, _, exponent = repr(float(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)  # value = 0.<digits> x 10^point
    significant = digits.lstrip("0")
    point -= len(digits) - len(significant)
    digits = significant.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    shown = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{shown}e{'+' if point > 0 else '-'}{abs(point - 1)}"


def _array_index(key: str) -> bool:
    return key.isdigit() and (key == "0" or key[0] != "0") and int(key) < _ARRAY_INDEX_LIMIT


def _code_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def js_key_order(keys: Iterable[str]) -> list[str]:
    """Keys as Convex hands an object over: sorted by UTF-16 code unit (JavaScript's ``<``, not
    Python's code points: they differ past U+FFFF), array indexes first, ascending."""
    keys = list(keys)
    # ASCII keys (all that Convex carries in an object) sort alike by code point and code unit.
    ordered = sorted(keys) if all(k.isascii() for k in keys) else sorted(keys, key=_code_units)
    indexes = [k for k in ordered if k.isascii() and _array_index(k)]
    if not indexes:
        return ordered
    return sorted(indexes, key=int) + [k for k in ordered if not (k.isascii() and _array_index(k))]


def carried(value: Any) -> bool:
    """Whether Convex carries this value as it is (cloud_functions/lib/metadata.ts's ``wireSafe``):
    every key a field name convex/values takes, every number exact in a float64."""
    if isinstance(value, dict):
        return all(_FIELD_NAME.fullmatch(k) and not k.startswith("$") and carried(v) for k, v in value.items())
    if isinstance(value, list):
        return all(carried(v) for v in value)
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= SAFE_INTEGER
    if isinstance(value, float):
        return not value.is_integer() or abs(value) <= SAFE_INTEGER
    return True


def _js(value: Any) -> Any:
    """``value`` as orjson writes what ``JSON.stringify`` writes of it in Convex (strings, booleans
    and null orjson already writes alike). By exact type: what orjson reads is never a subclass."""
    kind = type(value)
    if kind is float:
        if value.is_integer():
            return int(value) if abs(value) <= SAFE_INTEGER else orjson.Fragment(js_number(value))
        # Between these orjson writes a float as JavaScript does (contracts/archive_week's numbers).
        return value if 1e-5 <= abs(value) < 1e16 else orjson.Fragment(js_number(value))
    if kind is dict:
        return {k: _js(value[k]) for k in js_key_order(value)} if value else value
    if kind is list:
        return [_js(v) for v in value] if value else value
    if kind is int and abs(value) > SAFE_INTEGER:
        return orjson.Fragment(js_number(value))
    return value


# Values orjson writes as JSON.stringify does, whatever they hold.
_AS_IS = frozenset({str, bool, type(None)})


def line(record: Mapping[str, Any]) -> bytes:
    """One line, with its newline: the documented fields in ``export``'s order, then any other
    key (``metadataJson``) in Convex's order."""
    out: Mapping[str, Any] = record
    extra: dict[str, Any] = {}
    if tuple(record) != EXPORT_FIELDS:  # not already as ``export`` gives a record
        out = {name: record[name] for name in EXPORT_FIELDS if name in record}
        extra = {k: v for k, v in record.items() if k not in out}
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and metadata and not carried(metadata):
        out = {**out, "metadata": None}
        extra[TEXT_FIELD] = canonical_json(metadata).decode()
    if extra:
        out = {**out, **{key: extra[key] for key in js_key_order(extra)}}
    return orjson.dumps({k: v if type(v) in _AS_IS else _js(v) for k, v in out.items()}) + b"\n"


def exported_form(record: dict[str, Any]) -> dict[str, Any]:
    """A line read back as ``export`` prints the episode: metadata kept as text (``metadataJson``)
    read back into ``metadata`` (exactly: big integers keep their digits)."""
    text = record.get(TEXT_FIELD)
    if not isinstance(text, str) or record.get("metadata") is not None:
        return record
    out = {k: v for k, v in record.items() if k != TEXT_FIELD}
    out["metadata"] = parse_json(text)
    return out
