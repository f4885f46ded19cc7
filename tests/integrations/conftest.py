"""Fixtures of the integration tests."""

import pytest
from tiny_models import SAXPY


@pytest.fixture
def saxpy():
    from cudaperf_env.integrations.grading import resolve_task

    return resolve_task(SAXPY)
