"""Every shipped config's ``SweepConfig`` as a checkout derives it: its fields, ``to_dict()`` and
digest, as JSON on stdout (the reference ``tests/data/sweep_configs_main.json`` was written by
main (daf7c23) before ``SweepConfig`` was frozen).

Each config is derived twice: all tasks in one prompt format (``|same``: ``fmt`` is that
format) and, with two or more tasks, each in its own (``|mixed``: ``fmt`` is None).

    PYTHONPATH=<checkout> python bench/checks/sweep_config_reference.py <checkout> > out.json

(``PYTHONPATH``: the checkout's ``interp_heads``, not an installed one.)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from interp_heads.config.run_config import RunConfig


def reference(root: Path) -> dict:
    paths = [
        *sorted(root.glob("configs/**/*.toml")),
        *sorted(root.glob("tests/data/*.toml")),
        *sorted(root.glob("bench/checks/equivalence/*.toml")),
    ]
    out = {}
    for path in paths:
        cfg = RunConfig.from_toml(path)
        derivations = {"same": {t: "plain" for t in cfg.tasks}}
        if len(cfg.tasks) > 1:
            derivations["mixed"] = {t: f"f{i}" for i, t in enumerate(cfg.tasks)}
        for name, fmts in derivations.items():
            sweep = cfg.sweep_config(list(cfg.ks), fmts)
            out[f"{path.relative_to(root).as_posix()}|{name}"] = {
                "fields": dataclasses.asdict(sweep),
                "to_dict": sweep.to_dict(),
                "digest": sweep.digest(),
            }
    return out


if __name__ == "__main__":
    print(json.dumps(reference(Path(sys.argv[1])), indent=1, sort_keys=True))
