"""``retrieval_score``: how often a head copy-pastes the needle token it attends to (Wu et al. 2024)."""

from interp_heads.attribution.methods.base import METHODS, Method


@METHODS.register
class RetrievalScore(Method):
    name = "retrieval_score"
    target = (
        "share of needle tokens the head copy-pastes (its arg-max attention is on the needle "
        "token being produced), Wu et al. 2024; retrieval heads: >= 0.1"
    )
    signed = True

    def score(self, model, task, batches, opts, per_example):
        from interp_heads.attribution.retrieval import retrieval_scores

        rows = task.subset(ids=[i for b in batches for i in b.ids])
        scores, _ = retrieval_scores(model, rows, opts.fmt, per_example=per_example)
        return scores, self.target
