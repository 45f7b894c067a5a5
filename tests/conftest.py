import atexit
import os
import shutil
import tempfile

import pytest

# the tests keep parsed presets in a folder of their own, never the user's cache
os.environ["PLANNER_CACHE_DIR"] = tempfile.mkdtemp(prefix="planner-test-cache-")
atexit.register(shutil.rmtree, os.environ["PLANNER_CACHE_DIR"], ignore_errors=True)

from estimator import get_gpu, get_model  # noqa: E402


@pytest.fixture(scope="session")
def llama70():
    return get_model("llama-3.1-70b")


@pytest.fixture(scope="session")
def h100():
    return get_gpu("h100-sxm")
