"""The core's personas and clients for the training-mode tests."""

from tests.labeling.conftest import (  # noqa: F401  (fixtures)
    admin,
    api,
    assessor,
    coordinator,
    make_user,
    outsider,
    pool_array_cache_in_tmp,
    second_assessor,
)
