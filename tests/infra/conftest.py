"""One recording-mocks fixture: the example stack rendered once, with a sentinel broker secret.

Every assertion runs after the program has finished (the recorder returns only then), never
inside an `apply`, where another resource may not be recorded yet.
"""

from __future__ import annotations

import pytest

from tests.infra.support import SENTINEL, Resources, example_values, render


@pytest.fixture(scope="session")
def recorded() -> Resources:
    return render(example_values(), {"rabbitmq_url": SENTINEL})
