"""Tables: a pandas DataFrame when pandas imports, else a list of dicts (`Rows`).

Columns are the JSON field names in the order they first appear; integer fields stay integers
(int64, or pandas' nullable Int64 where some rows lack the field), so *_ns values are exact.
What the answer says besides its rows (totals, the profiles of a diff, …) is in `.attrs`, for
a DataFrame and a `Rows` alike."""

try:  # pandas is optional; a blocked or missing pandas gives lists of dicts
    import pandas as _pd
except ImportError:  # pragma: no cover - exercised by the no-pandas test in a subprocess
    _pd = None


class Rows(list):
    """A list of dicts (one per row) with the answer's other fields in `attrs`."""

    def __init__(self, rows=(), attrs=None):
        super().__init__(rows)
        self.attrs = dict(attrs or {})


def have_pandas():
    return _pd is not None


def _column_dtype(values):
    present = [v for v in values if v is not None]
    if not present:
        return "object"
    if all(isinstance(v, bool) for v in present):
        return "bool" if len(present) == len(values) else "boolean"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if all(-(1 << 63) <= v < (1 << 63) for v in present):
            return "int64" if len(present) == len(values) else "Int64"
        return "object"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float64"
    return "object"


def table(rows, attrs=None):
    """`rows` (dicts) as a DataFrame, or as `Rows` without pandas."""
    rows = list(rows)
    if _pd is None:
        return Rows(rows, attrs)
    columns = []
    seen = set()
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                columns.append(key)
    data = {}
    for column in columns:
        values = [row.get(column) for row in rows]
        dtype = _column_dtype(values)
        data[column] = _pd.Series(values, dtype=dtype if dtype != "object" else object)
    frame = _pd.DataFrame(data, columns=columns)
    frame.attrs.update(attrs or {})
    return frame


def _plain(value):
    """A pandas/numpy scalar as the Python value JSON would give (None for missing)."""
    if value is None:
        return None
    if _pd is not None:
        try:
            if value is _pd.NA or (not isinstance(value, (list, dict, str)) and _pd.isna(value)):
                return None
        except (TypeError, ValueError):
            pass
    item = getattr(value, "item", None)
    if item is not None and not isinstance(value, (list, dict, str)):
        return item()
    return value


def records(result):
    """The rows of a call's result as plain dicts, as the JSON had them: a field that is null or
    missing in a row is left out, numbers are Python ints and floats."""
    if _pd is not None and isinstance(result, _pd.DataFrame):
        rows = [{k: _plain(v) for k, v in row.items()} for row in result.to_dict("records")]
    else:
        rows = [dict(row) for row in result]
    return [{k: v for k, v in row.items() if v is not None} for row in rows]
