"""Red-team fixtures (the helpers live in ``hostile.py``)."""

from hostile import secret  # noqa: F401 - a fixture
