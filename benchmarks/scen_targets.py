"""The targets of issue 12 as paired ratios: asyncsdk's public API against the floor a
user could write instead (``benchmarks.floors``), in the same run, with the same JSON
library, run alternately (floor, sdk, sdk, floor, ...) and the ratio taken per repeat.

Each measurement runs in a fresh process pinned to the client core
(``benchmarks._target_child``); the server is the harness's own process on the other core.
With ``json`` the child makes orjson unimportable before importing asyncsdk (as without the
``speedups`` extra) and the floor uses ``json.loads``; with ``orjson`` both use orjson.
Every child starts with glibc's allocator in the ``heap`` state (``settle_allocator``: the
state of most processes, and the floor's cheapest); ``check`` and ``check_many`` are also
measured with the allocator as a fresh process has it (``as-is``) at ``AS_IS_LEVELS``,
labelled so: there the floor's 256 KiB reads may be mapped afresh (its page faults per
request say whether they were).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ._common import Paired, Section, has_module, run_child

FLOOR_CHECK = "raw aiohttp `session.get(params=)` + {lib}"
FLOOR_MANY = "raw aiohttp, c workers on one iterator, + {lib}"
FLOOR_ROWS = "`iter_chunked(64 KiB)` + `csv.reader` yielding lists (CSV body)"
FLOOR_LIST = "aiohttp read + pydantic v2 `validate_json`"


@dataclass(frozen=True)
class TargetSizes:
    check_requests: int
    many_count: int
    many_mem: tuple[int, int]
    rows: int
    list_records: int
    repeats: int
    rows_repeats: int  # each is five fresh processes: fewer in a smoke run



#: The targets of issue 27 (the embeddable engine: public APIs only, nothing
#: process-wide), each a paired ratio against its floor in the same run.
CHECK_CPU = 1.10  # check: client CPU per request, at most this times raw aiohttp's
CHECK_RPS = 0.90  # check: requests per second, at least (not a target of issue 27: shown)
CHECK_MANY = 0.90  # check_many: checks per second, at least
ROWS = 0.45  # rows(): rows per second, at least, both wire shapes
DOWNLOAD = 0.85  # download(): rows per second, at least
DECODE = 0.70  # contacts.list 10,000 records decoded, at least this times pydantic v2

def _child(kind: str, url: str, **args: Any) -> dict[str, Any]:
    return run_child("benchmarks._target_child", {"kind": kind, "url": url, **args})


def _libs() -> list[str]:
    return ["json", "orjson"] if has_module("orjson") else ["json"]


def _loads_name(lib: str) -> str:
    return "`orjson.loads`" if lib == "orjson" else "`json.loads`"


#: The allocator as a fresh process has it (``_common.settle_allocator``), also measured
#: at these levels with the json library: the floor's reads may be mapped afresh there.
AS_IS_LEVELS = (16, 64)
AS_IS = ", allocator as-is"


def _faults(r: dict[str, list[float]]) -> str:
    """The page faults per request of both sides: says which allocator state ran."""
    floor, sdk = (statistics.median(r[f"{side}_faults"]) for side in ("floor", "sdk"))
    return f"page faults per request: floor {floor:.2f}, asyncsdk {sdk:.2f}"


def _runs(levels: tuple[int, ...]) -> list[tuple[str, str, tuple[int, ...]]]:
    """``(JSON library, allocator state, levels)`` of each child: every library in the
    ``heap`` state, then std json ``as-is`` at ``AS_IS_LEVELS``."""
    return [*((lib, "heap", levels) for lib in _libs()),
            ("json", "as-is", tuple(v for v in levels if v in AS_IS_LEVELS))]


def check_pairs(url: str, s: TargetSizes, levels: tuple[int, ...]) -> list[Paired]:
    pairs: list[Paired] = []
    runs = _runs(levels)
    for lib, reads, run_levels in runs:
        got = _child("check", url, json=lib, levels=list(run_levels),
                     requests=s.check_requests, repeats=s.repeats, reads=reads)
        floor = FLOOR_CHECK.format(lib=_loads_name(lib))
        state = AS_IS if reads == "as-is" else ""
        for level in run_levels:
            r = got[str(level)]
            counted = reads != "as-is"
            pairs.append(Paired(f"check c={level}, {lib}{state}: req/s", "req/s", r["sdk_rps"],
                                r["floor_rps"], floor, ">=", CHECK_RPS, counted=counted))
            pairs.append(Paired(f"check c={level}, {lib}{state}: client CPU per request",
                                "us/req", r["sdk_cpu"], r["floor_cpu"], floor, "<=", CHECK_CPU,
                                _faults(r), counted=counted))
            if "std_rps" in r:  # the issue's own wording: speedups against plain json.loads
                pairs.append(Paired(f"check c={level}, asyncsdk + orjson vs json.loads floor: "
                                    "req/s", "req/s", r["sdk_rps"], r["std_rps"],
                                    FLOOR_CHECK.format(lib="`json.loads`"), ">=", 1.00))
    return pairs


def many_pairs(url: str, s: TargetSizes, levels: tuple[int, ...]) -> list[Paired]:
    pairs: list[Paired] = []
    runs = _runs(levels)
    for lib, reads, run_levels in runs:
        got = _child("many", url, json=lib, levels=list(run_levels), count=s.many_count,
                     repeats=s.repeats, reads=reads)
        state = AS_IS if reads == "as-is" else ""
        for level in run_levels:
            r = got[str(level)]
            pairs.append(Paired(f"check_many c={level}, {lib}{state}: checks/s", "checks/s",
                                r["sdk"], r["floor"], FLOOR_MANY.format(lib=_loads_name(lib)),
                                ">=", CHECK_MANY, counted=reads != "as-is"))
    small, big = s.many_mem
    rss = [_child("many_mem", url, json=_libs()[-1], count=n, level=64)["maxrss_kib"] / 1024
           for n in (small, big)]
    pairs.append(Paired(f"check_many c=64 flat memory: peak RSS at {big:,} minus at {small:,}",
                        "MiB", [rss[1] - rss[0]], None, "", "<=", 5.0,
                        f"{rss[0]:.1f} -> {rss[1]:.1f} MiB"))
    return pairs


def rows_pairs(url: str, s: TargetSizes) -> list[Paired]:
    """rows() and download() in both shapes against the CSV floor, one fresh process per
    measurement; each repeat measures the floor once and the four SDK reads beside it."""
    sides = [("floor", 1), ("rows", 1), ("rows", 2), ("download", 1), ("download", 2)]
    rates: dict[tuple[str, int], list[float]] = {side: [] for side in sides}
    growth: list[float] = []
    for repeat in range(s.rows_repeats):
        order = sides if repeat % 2 == 0 else sides[::-1]
        for method, job in order:
            r = _child("rows", url, json=_libs()[-1], method=method, job_id=job)
            if r["rows"] != s.rows:
                raise RuntimeError(f"{method} job {job}: {r['rows']} rows of {s.rows}")
            rates[(method, job)].append(s.rows / r["wall"])
            if method != "floor":
                growth.append(r["growth_kib"] / 1024)
    shape = {1: "CSV shape", 2: "JSON shape"}
    pairs = [Paired(f"{'job.rows()' if m == 'rows' else 'job.download()'} {s.rows:,} rows, "
                    f"{shape[j]}: rows/s", "rows/s", rates[(m, j)], rates[("floor", 1)],
                    FLOOR_ROWS, ">=", ROWS if m == "rows" else DOWNLOAD)
             for m, j in sides[1:]]
    pairs.append(Paired(f"rows()/download() peak RSS growth, {s.rows:,} rows, both shapes",
                        "MiB", growth, None, "", "<=", 16.0))
    return pairs


def list_pairs(url: str, s: TargetSizes) -> list[Paired]:
    lib = _libs()[-1]
    got = _child("list", url, json=lib, records=s.list_records, repeats=s.repeats)
    per_cpu_s = [[s.list_records / (ms / 1000) for ms in got[side]] for side in ("sdk", "floor")]
    note = "" if lib == "orjson" else "orjson not installed: asyncsdk parses with json"
    return [Paired(f"contacts.list {s.list_records:,} records, bytes -> models ({lib}), "
                   "end to end over loopback: records per client CPU second", "records/s",
                   per_cpu_s[0], per_cpu_s[1], FLOOR_LIST, ">=", DECODE, note)]


def run(url: str, *, sizes: TargetSizes, check_levels: tuple[int, ...] = (1, 16, 64),
        many_levels: tuple[int, ...] = (16, 64)) -> Section:
    section = Section(
        "targets", "Issue 27 targets: asyncsdk against its floor, paired",
        f"Each pair: asyncsdk's public API and its floor in one fresh client process, "
        f"alternated, {sizes.repeats} repeats; ratio = asyncsdk / floor per repeat, "
        "median reported. JSON library the same on both sides. check: "
        f"{sizes.check_requests:,} requests per run; check_many: {sizes.many_count:,} "
        f"addresses per run; rows: {sizes.rows:,} rows; list: {sizes.list_records:,} "
        "records.")
    section.pairs += check_pairs(url, sizes, check_levels)
    section.pairs += many_pairs(url, sizes, many_levels)
    section.pairs += rows_pairs(url, sizes)
    if has_module("pydantic"):
        section.pairs += list_pairs(url, sizes)
    else:
        section.notes.append("pydantic not installed (extra `bench`): the list pair is "
                             "skipped")
    if not has_module("orjson"):
        section.notes.append("orjson not installed: the orjson pairs are skipped "
                             "(install the `speedups` extra)")
    return section
