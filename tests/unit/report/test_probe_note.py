"""The probe's page line: held-out accuracy against chance, and the caveat when its labels are
the task identities."""

from __future__ import annotations

from interp_heads.report.probe_note import labels_are_tasks, probe_note
from interp_heads.report.tables import probe_table

PROBE = {"labels": "skills", "n_labels": 4, "heldout_accuracy": 1.0, "chance": 0.25,
         "n_heldout": 96, "rows": "evaluated", "tasks": ["a", "b", "c", "d"]}  # fmt: skip


def test_labels_equal_tasks_when_each_task_is_one_label():
    assert labels_are_tasks(PROBE, 4)  # the built-in tasks: one skill each
    assert labels_are_tasks({**PROBE, "labels": "tasks", "n_labels": 3}, 4)
    assert not labels_are_tasks(PROBE, 2)  # a CogQA file's 4 skills over 2 swept tasks


def test_the_note_gives_the_accuracy_and_the_caveat_only_when_it_holds():
    said = probe_note(PROBE, 4)
    assert "accuracy on the 96 rows it is read on is 1.00 (chance 0.25, 4 labels)" in said
    assert "task identities" in said
    assert "task identities" not in probe_note(PROBE, 2) and probe_note(None, 4) == ""
    html = probe_table({"probe": PROBE, "data": {t: {} for t in "abcd"}})
    assert "task identities" in html and "1.0" in html
