"""Cheap, exact tests first; hypothesis properties after them.

Under the mutation gate every mutant runs the tests that cover it with `-x`: most mutants are
killed by an exact-line or boundary test in milliseconds, so those run before the property
tests, which cost tens of examples each. Order never changes a verdict, only how soon the
first failure is found.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest


HERE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def _here(path: str) -> bool:
    """Whether a test file lies under tests/timing (resolved once per file: the mutation gate
    orders every mutated function's few hundred tests with this)."""
    return HERE in Path(path).resolve().parents


def _is_property_here(item: pytest.Item) -> bool:
    if not _here(str(item.path)):
        return False  # other directories keep their order
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    items.sort(key=_is_property_here)  # stable: file order kept within each group
