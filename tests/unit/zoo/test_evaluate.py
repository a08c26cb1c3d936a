"""The whole scoring of one zoo model, on the tiny zoo: tables filled, the search's f equal to the
truth's f of the set it found (same prompts, same ablation)."""

import pytest


def test_evaluate_tiny_zoo(tiny_zoo_model):
    from interp_heads.zoo.evaluate import evaluate

    tables = evaluate(tiny_zoo_model, n_prompts=16, kinds=("mean", "zero"))
    truth, methods, search = tables["truth"], tables["methods"], tables["search"]
    assert set(truth.kind) == {"mean", "zero"} and (truth.min_size >= 1).all()
    scored = methods[methods.error == ""]
    assert {"exact", "atp", "ablation_atp", "mean_ablation"} <= set(scored.method)
    assert scored.roc_auc.dropna().between(0, 1).all()
    # AUC is undefined only where every head (or none) is necessary: one class is empty
    n_necessary = truth.set_index("kind").necessary.str.count("L")
    undefined = set(scored[scored.roc_auc.isna()].kind)
    assert all(n_necessary[k] in (0, 4) for k in undefined)
    mean = search[search.kind == "mean"].iloc[0]
    assert mean.f_search == pytest.approx(mean.f_truth, abs=1e-3)
    assert mean.heads_over >= 0
    assert (
        "searched" in search[search.kind == "zero"].iloc[0].error
        or "zero" in search[search.kind == "zero"].iloc[0].error
    )
    assert len(tables["subsets"]) == 2 * 16
