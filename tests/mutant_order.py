"""Under the mutation gate, the tests of one mutant in the order most likely to kill it soonest.

mutmut runs every test that covers the mutated function, stopping at the first failure
(`pytest -x`), and hands them over in no particular order; a rule function is covered by about
200 tests (every test that judges a whole stack), most of which cannot see the mutant. Order
changes nothing for a surviving mutant (all its tests still run) and only how soon a killed one
stops. First the tests of the mutated module's own test file (`timing/invariants/lb.py` →
`test_rules_lb.py`), fastest first (mutmut's own per-test durations, from `mutmut-stats.json`
in its working directory); then the others, those whose names share the most words with the
mutated function's first, the fastest first among equals; the collection order breaks ties.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

MARK = "__mutmut_"  # a mutant's name: <module>.x_<function>__mutmut_<n> (methods: xǁClassǁmethod)


class Item(Protocol):
    nodeid: str
    name: str


def words(name: str) -> frozenset[str]:
    return frozenset(w for w in re.split(r"[^a-z0-9]+", name.lower()) if len(w) > 1 and w != "test")


def mutated(mutant: str) -> tuple[str, frozenset[str]] | None:
    """(the mutated module's last name, the words of its function), or None when `mutant` is
    not a mutant's name (mutmut's clean, stats and forced-fail runs)."""
    if MARK not in mutant:
        return None
    function = mutant.rsplit(MARK, 1)[0]
    module, _, name = function.rpartition(".")
    name = name.removeprefix("x_").removeprefix("x")
    return module.rpartition(".")[2], words(name)


def order(items: Sequence[Item], mutant: str, durations: Mapping[str, float]) -> list[Item]:
    target = mutated(mutant)
    if target is None:
        return list(items)
    module, fn_words = target

    def key(pair: tuple[int, Item]) -> tuple[bool, int, float, int]:
        index, item = pair
        stem = Path(item.nodeid.split("::", 1)[0]).stem
        own = module in words(stem)
        shared = 0 if own else len(fn_words & words(item.name.split("[", 1)[0]))
        return (not own, -shared, durations.get(item.nodeid, float("inf")), index)

    return [item for _, item in sorted(enumerate(items), key=key)]


def durations(stats: Path) -> dict[str, float]:
    try:
        data: Any = json.loads(stats.read_text())
        return {str(k): float(v) for k, v in data["duration_by_test"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # no stats yet: the order falls back to relevance alone
