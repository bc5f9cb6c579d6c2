"""MixPert config labels as text: the pair sets (levels, ``sigN``, ``slicesLsigN``, explicit
pairs) and the label parser.

Pure Python (no numba, no numpy), so the CUDA emitter (``runtime/cuda/desc.py``, imported by the
``emit-cuda`` pass) reads labels with the very parser the scheme uses
(``runtime/schemes/mixpert.py``); the label grammar is documented there.
"""

from __future__ import annotations

__all__ = ["Pairs", "LEVELS", "MAX_SEGMENTS", "MAX_SEG0_BITS", "MAX_CONFIG_INT", "significance_pairs", "slice_pairs",
           "parse_pairs", "parse_label_fields"]

Pairs = tuple[tuple[int, int], ...]

#: most INT8 segments per element (9 x 7 bits reach the 62-bit limit of the executors' words)
MAX_SEGMENTS = 9
#: most significant bits of segment 0 (implied one included; a signed INT8 holds 7 magnitude bits)
MAX_SEG0_BITS = 7
#: largest integer any scheme's config field may hold (tile sizes, fallback bits, ...): the executors read
#: configs as int64 words (schemes/emulation.py's label parser checks it too)
MAX_CONFIG_INT = 2**62

#: range of each integer field, checked before anything loops over it
_INT_RANGES: dict[str, tuple[int, int]] = {
    "segments": (1, MAX_SEGMENTS),
    "seg0_bits": (1, MAX_SEG0_BITS),
    "tile": (1, MAX_CONFIG_INT),
    "fallback": (0, MAX_CONFIG_INT),
}


class _OutOfRange(ValueError):
    """An integer field outside its range (passed on as is, not as "bad config part")."""


def _int_field(key: str, val: str, text: str) -> int:
    """``val`` as the integer field ``key``, range-checked: _OutOfRange names the field and its range."""
    v = int(val)
    lo, hi = _INT_RANGES[key]
    if not lo <= v <= hi:
        raise _OutOfRange(f"mixpert: {key}={val} in {text!r} must be in {lo}..{hi}")
    return v


def _rect(l: int, r: int) -> Pairs:
    return tuple((i, j) for i in range(l + 1) for j in range(r + 1))


#: the paper's configurations on 3 segments: (l, r) = (1,1), (1,2), (2,1), (2,2)
#: with 4/6/6/8 products (level IV drops the (2,2) pair), and all 9 pairs
LEVELS: dict[str, Pairs] = {
    "full": _rect(2, 2),
    "IV": tuple(p for p in _rect(2, 2) if p != (2, 2)),
    "III": _rect(2, 1),
    "II": _rect(1, 2),
    "I": _rect(1, 1),
}


def significance_pairs(segments: int, limit: int) -> Pairs:
    """All pairs ``(i, j)`` with ``i + j <= limit`` (Ozaki-style truncation)."""
    return tuple((i, j) for i in range(segments) for j in range(segments) if i + j <= limit)


def slice_pairs(segments: int, size: int, limit: int) -> Pairs:
    """Ozaki truncation on slices of ``size`` segments: all pairs ``(i, j)`` with
    ``i // size + j // size <= limit`` (label ``pairs=slices{size}sig{limit}``).
    Each slice pair is one rectangle, so the executor runs it as one exact dgemm
    where the budget allows (3 segments of 7 bits: 42 bits for K <= 2048)."""
    return tuple((i, j) for i in range(segments) for j in range(segments) if i // size + j // size <= limit)


def parse_pairs(text: str, segments: int) -> Pairs:
    if text.startswith("sig") and text[3:].isdigit():
        return significance_pairs(segments, int(text[3:]))
    size, sep, limit = text[6:].partition("sig")
    if text.startswith("slices") and sep and size.isdigit() and limit.isdigit() and int(size) >= 1:
        return slice_pairs(segments, int(size), int(limit))
    out = []
    for tok in text.split("."):
        if len(tok) != 2 or not tok.isdigit():
            raise ValueError(f"mixpert: bad pair {tok!r} in pairs={text!r}; write sigN or two-digit pairs like 00.01.10")
        out.append((int(tok[0]), int(tok[1])))
    return tuple(out)


def parse_label_fields(text: str, default_segments: int) -> dict[str, object]:
    """The fields a MixPert config label gives (``level=IV,align=row`` -> ``{"pairs": ..., "align":
    "row"}``; a level or ``pairs=`` form resolved to its pairs over the label's segments, else
    ``default_segments``). ValueError names a bad, repeated or unknown part."""
    values: dict[str, object] = {}
    level = pairs = None
    seen: set[str] = set()
    for item in (s.strip() for s in text.split(",")) if text.strip() else ():
        if not item:
            raise ValueError(f"mixpert: empty part in config {text!r}; e.g. 'level=IV,align=row'")
        key, sep, val = (s.strip() for s in item.partition("="))
        if key in seen:
            raise ValueError(f"mixpert: field {key!r} is given twice in {text!r}")
        seen.add(key)
        if key == "fallback" and val.lstrip().startswith("-"):
            raise ValueError(
                f"mixpert: fallback={val} in {text!r}: give a bit count >= 0 (0 = every tile falls "
                "back) or 'off'"
            )
        if key == "level" and sep and val not in LEVELS:
            raise ValueError(f"mixpert: unknown level {val!r} in {text!r}; levels are {', '.join(LEVELS)}")
        try:
            if not sep:
                raise ValueError
            if key == "level":
                if val not in LEVELS:
                    raise ValueError
                level = val
            elif key == "pairs":
                pairs = val
            elif key in ("segments", "seg0_bits"):
                values[key] = _int_field(key, val, text)
            elif key in ("align", "rounding", "digits"):
                values[key] = val
            elif key == "tile":
                values[key] = tuple(_int_field(key, t, text) for t in val.split("x", 3))
            elif key == "fallback":
                values[key] = -1 if val == "off" else _int_field(key, val, text)
            else:
                raise KeyError
        except KeyError:
            if key == "top_bits":
                raise ValueError(
                    f"mixpert: the field top_bits is now called seg0_bits (same meaning: significant bits of "
                    f"segment 0, implied one included; the default is now 7, the paper's layout); rewrite {item!r}"
                ) from None
            raise ValueError(
                f"mixpert: unknown config field {key!r} in {text!r}; fields are level, segments, pairs, "
                "seg0_bits, digits, align, rounding, tile, fallback"
            ) from None
        except _OutOfRange:
            raise
        except ValueError:
            raise ValueError(f"mixpert: bad config part {item!r} in {text!r}; e.g. 'level=IV,align=row'") from None
    if level is not None and pairs is not None:
        raise ValueError(f"mixpert: {text!r} gives both level and pairs; give one")
    segments = int(values.get("segments", default_segments))
    if level is not None:
        if segments != 3:
            raise ValueError(f"mixpert: level={level} needs 3 segments, got segments={segments}")
        values["pairs"] = LEVELS[level]
    elif pairs is not None:
        values["pairs"] = parse_pairs(pairs, segments)
    return values
