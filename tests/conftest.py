import pytest

from estimator import get_gpu, get_model


@pytest.fixture(scope="session")
def llama70():
    return get_model("llama-3.1-70b")


@pytest.fixture(scope="session")
def h100():
    return get_gpu("h100-sxm")
