"""Cheap, exact tests first; hypothesis properties after them.

Under the mutation gate every mutant runs the tests that cover it with `-x`: most mutants are
killed by an exact-line or boundary test in milliseconds, so those run before the property
tests, which cost tens of examples each. Order never changes a verdict, only how soon the
first failure is found.
"""

from __future__ import annotations

from pathlib import Path

import pytest


HERE = Path(__file__).resolve().parent


def _is_property_here(item: pytest.Item) -> bool:
    if HERE not in Path(str(item.path)).resolve().parents:
        return False  # other directories keep their order
    return bool(getattr(getattr(item, "obj", None), "is_hypothesis_test", False))


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    items.sort(key=_is_property_here)  # stable: file order kept within each group
