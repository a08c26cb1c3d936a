"""``HeadScores``: one score per attention head, its ranking, table, heatmap and file formats.

Importance is ``|score|`` by default (``by="abs"``): a head whose patching moves the target strongly
in either direction matters. ``by="signed"`` ranks by the raw score instead (highest first); it is
the default of scores whose ``provenance["rank_by"]`` says so (``ablation_atp`` and
``mean_ablation``, which estimate the drop caused by ablating the head: a head whose ablation
*helps* the task is not one the task depends on). Refined heads (``refine=m``) always rank
first, the others keep their cheap order below them.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd
import torch
from jaxtyping import Bool, Float

from interp_heads.errors import InputError
from interp_heads.heads import Head, head_label
from interp_heads.store import StoreWarning, atomic, read_entry, write_entry

RankBy = Literal["abs", "signed"]
FORMAT = "interp_heads.HeadScores/1"


@dataclass
class HeadScores:
    """Scores ``[n_layers, n_heads]`` (float, CPU) of one method on one task.

    Attributes:
        scores: one float per head (layer, head).
        method: attribution method (e.g. ``"exact"``, ``"atp+exact@32"``).
        task: task name.
        target: what the scores measure (stored under the key ``metric``).
        provenance: model spec, examples, library versions, seconds, date.
        refined: optional bool mask of heads re-scored exactly; they rank first.
    """

    scores: Float[torch.Tensor, "layer head"]
    method: str
    task: str
    target: str = ""
    provenance: dict = field(default_factory=dict)
    refined: Bool[torch.Tensor, "layer head"] | None = None

    def __post_init__(self):
        self.scores = torch.as_tensor(self.scores).detach().float().cpu()
        if self.scores.ndim != 2:
            raise ValueError(
                f"scores must be [n_layers, n_heads], got shape {tuple(self.scores.shape)}"
            )
        if self.refined is not None:
            self.refined = torch.as_tensor(self.refined).bool().cpu()

    def __repr__(self) -> str:
        """One line: method, task, shape, the top heads with their scores (not the tensor)."""
        top = ", ".join(
            f"{head_label(layer, head)} {float(self.scores[layer, head]):.3g}"
            for layer, head in self.top(5)
        )
        n = self.provenance.get("n_examples")
        on = f", {n} examples" if n is not None else ""
        return (
            f"HeadScores(method={self.method!r}, task={self.task!r}, "
            f"{self.n_layers}x{self.n_heads} heads{on}, rank_by={self.rank_by!r}, top: {top})"
        )

    def _repr_html_(self) -> str:
        """A notebook cell shows the top heads and the heatmap (``interp_heads.figures.notebook``)."""
        from interp_heads.figures.notebook import scores_html

        return scores_html(self)

    @property
    def n_layers(self) -> int:
        return self.scores.shape[0]

    @property
    def n_heads(self) -> int:
        return self.scores.shape[1]

    @property
    def rank_by(self) -> RankBy:
        """The default ranking direction: ``provenance["rank_by"]`` or ``"abs"``."""
        return self.provenance.get("rank_by") or "abs"

    def importance(self, by: RankBy | str | None = None) -> Float[torch.Tensor, "layer head"]:
        """``|score|`` (``by="abs"``) or the score (``by="signed"``); NaN counts as least important."""
        by = by or self.rank_by
        if by not in ("abs", "signed"):
            raise ValueError(f"by must be 'abs' or 'signed', got {by!r}")
        imp = self.scores.abs() if by == "abs" else self.scores.clone()
        return torch.nan_to_num(imp, nan=-float("inf"))

    def _order(self, by: RankBy | str | None) -> list[int]:
        imp = self.importance(by).flatten().tolist()
        ref = self.refined.flatten().tolist() if self.refined is not None else [False] * len(imp)
        return sorted(range(len(imp)), key=lambda i: (not ref[i], -imp[i], i))

    def top(self, k: int, by: RankBy | str | None = None) -> list[Head]:
        """The ``k`` most important heads ``(layer, head)``, most important first."""
        return [divmod(i, self.n_heads) for i in self._order(by)[: max(0, k)]]

    def top_labels(self, k: int, by: RankBy | str | None = None) -> list[str]:
        """Like :meth:`top`, as ``L{l}H{h}`` labels."""
        return [head_label(layer, head) for layer, head in self.top(k, by)]

    def rank(self, by: RankBy | str | None = None) -> torch.Tensor:
        """Rank of each head ``[n_layers, n_heads]`` (long), 1 = most important."""
        ranks = torch.empty(self.n_layers * self.n_heads, dtype=torch.long)
        for r, i in enumerate(self._order(by)):
            ranks[i] = r + 1
        return ranks.view(self.n_layers, self.n_heads)

    def to_frame(self, by: RankBy | str | None = None) -> pd.DataFrame:
        """Tidy table, one row per head: task, method, layer, head, label, score, rank, refined."""
        ranks = self.rank(by)
        rows = [
            {
                "task": self.task,
                "method": self.method,
                "layer": layer,
                "head": head,
                "label": head_label(layer, head),
                "score": float(self.scores[layer, head]),
                "rank": int(ranks[layer, head]),
                "refined": bool(self.refined[layer, head]) if self.refined is not None else False,
            }
            for layer in range(self.n_layers)
            for head in range(self.n_heads)
        ]
        return pd.DataFrame(rows)

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, *, target: str = "", provenance: dict | None = None
    ) -> HeadScores:
        """Inverse of :meth:`to_frame` (one task and method per frame)."""
        n_layers, n_heads = int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1
        scores = torch.full((n_layers, n_heads), float("nan"))
        refined = torch.zeros(n_layers, n_heads, dtype=torch.bool)
        for row in frame.itertuples(index=False):
            scores[row.layer, row.head] = row.score
            if "refined" in frame.columns:
                refined[row.layer, row.head] = bool(row.refined)
        out = cls(
            scores,
            str(frame["method"].iloc[0]),
            str(frame["task"].iloc[0]),
            target,
            dict(provenance or {}),
            refined if bool(refined.any()) else None,
        )
        if "rank" in frame.columns and "rank_by" not in out.provenance:
            out.provenance.update(out._stored_order(frame))
        return out

    def _stored_order(self, frame: pd.DataFrame) -> dict:
        """``{"rank_by": "signed"}`` when that reproduces more of a table's ``rank`` column than
        the default ``abs`` does (then ``{}``): a ranking read back keeps its own order."""
        stored = torch.zeros(self.n_layers, self.n_heads, dtype=torch.long)
        for row in frame.itertuples(index=False):
            stored[row.layer, row.head] = int(row.rank)
        agree = {by: int((self.rank(by) == stored).sum()) for by in ("abs", "signed")}
        return {"rank_by": "signed"} if agree["signed"] > agree["abs"] else {}

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "task": self.task,
            "method": self.method,
            "metric": self.target,
            "provenance": self.provenance,
            "scores": self.scores.tolist(),
            "refined": self.refined.tolist() if self.refined is not None else None,
        }

    @classmethod
    def from_dict(cls, d: dict) -> HeadScores:
        if d.get("format") != FORMAT:
            raise InputError(f"not a HeadScores file (format {d.get('format')!r})")
        refined = torch.tensor(d["refined"]).bool() if d.get("refined") is not None else None
        scores = torch.tensor([[float("nan") if x is None else x for x in r] for r in d["scores"]])
        return cls(
            scores, d["method"], d["task"], d.get("metric", ""), d.get("provenance", {}), refined
        )

    def save(self, path: str | Path) -> Path:
        """Write ``.json`` (everything) or ``.parquet`` (the tidy table + metadata)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".json":
            d = self.to_dict()
            d["scores"] = [
                [None if x != x else x for x in row] for row in d["scores"]
            ]  # NaN -> null
            write_entry(path, d, indent=1)  # atomic, with a checksum (verified on resume)
        elif path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(self.to_frame(), preserve_index=False)
            meta = {
                b"interp_heads": json.dumps(
                    {"format": FORMAT, "metric": self.target, "provenance": self.provenance},
                    default=str,
                ).encode()
            }
            with atomic(path) as tmp:
                pq.write_table(
                    table.replace_schema_metadata({**(table.schema.metadata or {}), **meta}), tmp
                )
        else:
            raise InputError(f"unsupported extension {path.suffix!r}: use .json or .parquet")
        return path

    @classmethod
    def load(cls, path: str | Path) -> HeadScores:
        """Read a file written by :meth:`save`."""
        path = Path(path)
        if path.suffix == ".json":
            try:
                d = json.loads(path.read_bytes().decode("utf-8"))
                if not isinstance(d, dict):
                    raise InputError(f"expected a JSON object, found {type(d).__name__}")
                d.pop("_sha256", None)
                return cls.from_dict(d)
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}: not a readable HeadScores file ({exc})") from None
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(path)
                meta = json.loads((table.schema.metadata or {}).get(b"interp_heads", b"{}"))
            except (pa.ArrowException, ValueError) as exc:
                raise InputError(f"{path}: not a readable parquet file ({exc})") from None
            return cls.from_frame(
                table.to_pandas(),
                target=meta.get("metric", ""),
                provenance=meta.get("provenance", {}),
            )
        raise InputError(f"unsupported extension {path.suffix!r}: use .json or .parquet")

    def figure(self, by: RankBy | str | None = None, title: str | None = None, **kwargs):
        """Layer x head heatmap (``figures.heatmaps.head_heatmap``: ``markers``, ``top``),
        ranked in the ranking's own order unless ``by`` says otherwise."""
        from interp_heads.figures.heatmaps import head_heatmap

        return head_heatmap(self, by, title, **kwargs)

    heatmap = figure  # its first name; ``figure`` is the one every result object has

    def explore(
        self, known: pd.DataFrame | None = None, attention: dict | None = None, stability: str = ""
    ):
        """The head explorer (``figures.explorer``): click a head of the grid for its score and
        95% interval, its ranks (method, split halves, exact drop), known-kind scores
        (``known``: a ``known_heads.csv`` frame) and attention patterns (``attention``: an
        ``attention_data`` record, e.g. ``attention.json``'s ``explore`` entry); a notebook
        cell shows it, ``.save(path)`` writes one offline page. ``stability``: the ranking's
        verdict in words (the report passes ``attribution.stability.verdict``'s); default: the
        stored split-half numbers as they are."""
        from interp_heads.figures.explorer import Explorer, explorer_html

        entry = self.provenance.get("stability")
        if not stability and isinstance(entry, dict):
            shared, jac = entry.get("shared") or {}, entry.get("jaccard") or {}
            stability = entry.get("too_few") or "; ".join(
                f"the halves share {shared.get(k)} of their top {k} (Jaccard {j})"
                for k, j in jac.items()
            )
        return Explorer(explorer_html(self, known, attention, str(stability or "")))


def overlap(scores_by_task: dict[str, HeadScores], k: int, by: RankBy = "abs") -> pd.DataFrame:
    """Jaccard index of the top-``k`` head sets, task x task (square frame, 1 on the diagonal)."""
    sets = {name: set(s.top(k, by)) for name, s in scores_by_task.items()}
    names = list(sets)
    data = [[len(sets[a] & sets[b]) / max(1, len(sets[a] | sets[b])) for b in names] for a in names]
    frame = pd.DataFrame(data, index=names, columns=names)
    frame.attrs["k"] = k
    return frame


def overlap_heatmap(frame: pd.DataFrame, title: str | None = None):
    """Heatmap of an :func:`overlap` frame (``interp_heads.report.overlap_heatmap``)."""
    from interp_heads.figures.heatmaps import overlap_heatmap as _plot

    return _plot(frame, title)


def load_stored(path, key: str) -> HeadScores | None:
    """The ``HeadScores`` stored in ``path`` when its resume key is ``key``; None otherwise.

    A damaged file is reported (``StoreWarning`` naming it) and treated as absent.
    """
    d = read_entry(
        path, {"format": str, "scores": list, "method": str, "task": str, "provenance": dict}
    )
    if d is None or d["provenance"].get("resume_key") != key:
        return None
    try:
        if d["format"] != FORMAT:
            raise ValueError(f"format {d['format']!r}, expected {FORMAT!r}")
        return HeadScores.from_dict(d)
    except (ValueError, TypeError, KeyError, RuntimeError) as exc:
        warnings.warn(
            f"{path}: bad scores ({exc}); ignored, it will be recomputed",
            StoreWarning,
            stacklevel=2,
        )
        return None
