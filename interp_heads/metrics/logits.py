"""Logit metrics: continuous scores of a condition from one teacher-forced forward pass.

Generated-answer metrics score the text a masked model wrote. These score the model's output
distribution under the condition's mask instead, with no generation: each example's rendered
prompt followed by its gold answer's tokens goes through the masked model once, and

- ``answer_logprob``: the gold answer's log-probability, the sum over its tokens of
  ``log p(token | prompt, earlier answer tokens)`` (teacher forced);
- ``logit_diff``: the logit of the gold answer's first token minus that of a distractor's first
  token at the last prompt position. The distractor is the example's first ``distractors`` entry
  whose first token differs from the gold one, else its ``corrupted_answer`` (the answer the
  attribution methods' logit difference uses). A task with no such candidate is refused with a
  one-line error naming the examples, never scored as 0;
- ``kl_unmasked``: ``KL(P_unmasked || P_masked)`` of the next-token distribution at the last
  prompt position (0 for the unmasked model itself).

All three read the same forward pass (``metrics.logit_scores.score_condition``, which holds the
torch code: importing the registry stays light); the sweep runs it once per
condition (``sweep.loop``), so asking for all three costs one forward pass per condition. The
answer follows the prompt as generation would produce it: after a space, unless the rendered
prompt ends with whitespace (a chat template's ``assistant\\n``). The mask acts at every position
(``positions = "all"``); other scopes are refused, since a teacher-forced pass has no single
"last position" of generation.
"""

from __future__ import annotations

from interp_heads.metrics.base import Metric, MetricItem
from interp_heads.metrics.registry import METRICS


class LogitMetric(Metric):
    """A metric of the masked model's logits (``per_condition``): scored by
    ``metrics.logit_scores.score_condition`` from one forward pass per condition, never from
    generated answers."""

    per_condition = True
    needs_distractor = False

    def score(self, items: list[MetricItem]) -> list[float]:
        raise TypeError(f"{self.name} scores a condition's logits (score_condition), not answers")


@METRICS.register
class AnswerLogprob(LogitMetric):
    name, label = "answer_logprob", "Answer log-prob"


@METRICS.register
class LogitDiff(LogitMetric):
    name, label = "logit_diff", "Logit diff (gold - distractor)"
    needs_distractor = True


@METRICS.register
class KLUnmasked(LogitMetric):
    name, label = "kl_unmasked", "KL from unmasked"
