import pytest


@pytest.fixture(scope="session")
def tiny_zoo_cache(tmp_path_factory):
    """A temporary weights cache holding the tiny zoo's model (trained once per session)."""
    import os

    from interp_heads.zoo.cache import zoo_model
    from interp_heads.zoo.recipes import TINY_ZOO

    cache = tmp_path_factory.mktemp("zoo_cache")
    old = os.environ.get("INTERP_HEADS_CACHE")
    os.environ["INTERP_HEADS_CACHE"] = str(cache)
    try:
        model = zoo_model(TINY_ZOO["tiny_successor"])
    finally:  # only this training sees the temporary cache; tests that read it set it again
        if old is None:
            os.environ.pop("INTERP_HEADS_CACHE", None)
        else:
            os.environ["INTERP_HEADS_CACHE"] = old
    return cache, model


@pytest.fixture
def tiny_zoo_model(tiny_zoo_cache, monkeypatch):
    """The tiny zoo's trained model, with ``INTERP_HEADS_CACHE`` on its cache for this test."""
    cache, model = tiny_zoo_cache
    monkeypatch.setenv("INTERP_HEADS_CACHE", str(cache))
    return model
