"""What the probe's accuracy can say: its held-out accuracy, and whether its labels are the task
identities (then a perfect probe may read each task's surface form, its prompt template, not a
cognitive skill). Read from a run manifest's ``probe`` entry (``attribution.probe``)."""

from __future__ import annotations


def labels_are_tasks(probe: dict, n_tasks: int) -> bool:
    """Whether each label is one task's rows: labels by task, or as many labels as tasks (each
    task one skill: the built-in tasks carry none, a CogQA panel is one skill)."""
    return probe.get("labels", "tasks") == "tasks" or probe.get("n_labels") == n_tasks


def probe_note(probe: dict | None, n_tasks: int) -> str:
    """One sentence: the probe's held-out accuracy against chance, and the labels' caveat."""
    if not probe:
        return ""
    acc, chance = probe.get("heldout_accuracy"), probe.get("chance")
    n = probe.get("n_heldout")
    rows = (
        f"the {n} rows it is read on" if probe.get("rows") == "evaluated" else f"{n} held-out rows"
    )
    said = (f"The probe's accuracy on {rows} is {acc:.2f} (chance "
            f"{chance:.2f}, {probe.get('n_labels')} labels)") if acc is not None else ""  # fmt: skip
    if said and labels_are_tasks(probe, n_tasks):
        said += (": its labels are the task identities, so it may tell the tasks apart by their "
                 "surface form (prompt template, answer type), not by a cognitive skill")  # fmt: skip
    return said + "." if said else ""
