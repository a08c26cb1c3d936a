"""``interp-heads tasks``: list, show or build the task data sets."""

from __future__ import annotations

import json

from interp_heads.errors import PipelineError
from interp_heads.pipeline.loading import load_any_task, load_any_tasks


def cmd_tasks(args) -> int:
    """List, show or build the task data sets."""
    if args.action == "list":
        try:
            from interp_heads.tasks import list_tasks

            names = list(list_tasks())
        except ImportError:
            from interp_heads.tasks.schema import BUILTIN_TASKS

            names = list(BUILTIN_TASKS)
        for name in names:
            print(name)
        return 0
    if args.action == "show":
        if not args.name:
            raise PipelineError("tasks show needs a task name or file")
        if _show_skills(args.name):
            return 0
        task = load_any_task(args.name)
        print(
            f"{task.name}: {len(task)} examples, sha256 {task.sha256[:16] or '-'}, source {task.source or '-'}"
        )
        print(f"corrupted prompts: {'yes' if task.has_corrupted else 'no'}")
        for ex in list(task)[: 3 if args.n is None else args.n]:
            print(json.dumps(ex.to_dict(), ensure_ascii=False))
        return 0
    from interp_heads.tasks import builder

    return int(builder.main(args.rest + ([] if args.n is None else ["-n", str(args.n)])) or 0)


def _show_skills(spec: str) -> bool:
    """A whole CogQA file: print each cognitive skill with its count (True when printed)."""
    from interp_heads.tasks.cogqa import describe, is_cogqa, split_spec

    if not is_cogqa(spec) or split_spec(spec)[1] is not None:
        return False
    load_any_tasks(spec)  # bad input: one line, exit status 2
    print("\n".join(describe(spec)))
    return True
