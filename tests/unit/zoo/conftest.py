import pytest


@pytest.fixture(scope="session")
def tiny_zoo_model(tmp_path_factory):
    """The tiny zoo's model, trained once per session into a temporary cache."""
    import os

    from interp_heads.zoo.cache import zoo_model
    from interp_heads.zoo.recipes import TINY_ZOO

    old = os.environ.get("INTERP_HEADS_CACHE")
    os.environ["INTERP_HEADS_CACHE"] = str(tmp_path_factory.mktemp("zoo_cache"))
    try:
        yield zoo_model(TINY_ZOO["tiny_successor"])
    finally:
        if old is None:
            os.environ.pop("INTERP_HEADS_CACHE", None)
        else:
            os.environ["INTERP_HEADS_CACHE"] = old
