"""A study's options: its frozen ``Options`` dataclass, set by ``--param KEY=VALUE``: each value
typed from its field (bounds from ``Annotated``), an unknown key or a bad value one line and
exit 2 before anything is written, every ``--param`` the docs print still accepted."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated

import pytest
from annotated_types import Ge, Gt, Interval, Lt

from interp_heads.errors import PipelineError
from interp_heads.studies import STUDIES, Study, StudyRun
from interp_heads.studies.base import StudyContext
from interp_heads.studies.options import needed, option_kinds
from tests.helpers import DATA, ROOT, cli

TINY = str(DATA / "tiny.toml")


class _Typed(Study):
    """One tiny run named by its needed ``label``; its options of every kind (no test here gets
    as far as a run)."""

    name = "test_typed_options"
    summary = "options of every kind"

    @dataclass(frozen=True)
    class Options:
        label: str | None = field(default=None, metadata={"help": "a needed text"})
        count: Annotated[int, Interval(ge=2, le=9)] = field(default=3, metadata={"help": "n"})
        above: Annotated[int, Gt(0), Lt(10)] = 5  # 1..9
        floor: Annotated[int, Ge(-4)] | None = 0  # -4.., no upper bound
        flag: bool = False

    def runs(self, size):
        return [StudyRun(f"typed/{self.param('label')}", TINY, {"seeds": self.param("count")})]

    def write_pages(self, folders, docs):
        raise AssertionError("not reached")


@pytest.fixture
def typed():
    STUDIES.register(_Typed)
    yield _Typed
    STUDIES.unregister(_Typed.name)


def test_each_value_is_parsed_to_its_fields_type(typed):
    given = dict(label=" x.jsonl ", count="9", above="1", floor="-4", flag="YES")
    study = STUDIES.build(typed.name, None, StudyContext(given))
    got = study.params
    assert isinstance(got, typed.Options)
    assert (got.label, got.count, got.above, got.floor, got.flag) == ("x.jsonl", 9, 1, -4, True)
    assert type(got.count) is int and type(got.flag) is bool
    big = STUDIES.build(typed.name, None, StudyContext({"floor": "123456789"}))
    assert big.params.floor == 123456789  # no upper bound
    defaults = STUDIES.build(typed.name).params  # untouched: the declared defaults
    assert (defaults.label, defaults.count, defaults.above, defaults.flag) == (None, 3, 5, False)
    with pytest.raises(Exception, match="frozen|cannot assign"):
        defaults.count = 4  # frozen like every variant's Options


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("count", "1", "expected 2..9"),
        ("count", "10", "expected 2..9"),
        ("above", "0", "expected 1..9"),
        ("above", "10", "expected 1..9"),
        ("floor", "-5", "expected -4.."),
        ("count", "3.0", "expected a whole number"),
        ("flag", "maybe", "expected true or false"),
    ],
)
def test_a_bad_value_is_one_line_naming_its_key(typed, key, value, says):
    with pytest.raises(PipelineError) as err:
        STUDIES.build(typed.name, None, StudyContext({key: value}))
    message = str(err.value)
    assert len(message.splitlines()) == 1 and f"--param {key}=" in message and says in message


def test_an_unknown_key_is_one_line_exit_2_before_anything_is_written(typed, tmp_path, capsys):
    runs, docs = tmp_path / "runs", tmp_path / "docs"
    argv = ["study", typed.name, "--runs", runs, "--docs", docs, "--param", "label=a"]
    assert cli(*argv, "--param", "cuont=4") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unknown parameter(s) cuont; known: label, count, above, floor, flag" in err
    assert cli(*argv, "--param", "count=11") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--param count=11: expected 2..9" in err
    assert cli("study", typed.name, "--runs", runs, "--docs", docs) == 2  # label is needed
    assert "needs --param label=VALUE (a needed text)" in capsys.readouterr().err
    assert not runs.exists() and not docs.exists()


def test_needed_options_are_those_without_a_default(typed):
    assert needed(typed.Options) == ["label"]
    assert needed(STUDIES.get("claim").Options) == ["task", "ranking"]
    assert STUDIES.build(typed.name).describe().endswith("(parameters label=...)")


def test_an_option_of_a_type_param_cannot_give_is_refused_when_registered():
    class Floaty(Study):
        name = "test_floaty_options"

        @dataclass(frozen=True)
        class Options:
            rate: float = 0.5

    with pytest.raises(TypeError, match="rate"):
        STUDIES.register(Floaty)
    assert "test_floaty_options" not in STUDIES


def test_two_studies_may_declare_one_option_with_different_defaults(typed):
    class OtherK(Study):
        name = "test_other_k"

        @dataclass(frozen=True)
        class Options:
            k: int = 3  # claim's k is 16: each study's options are its own

    STUDIES.register(OtherK)
    try:
        assert STUDIES.build("test_other_k").params.k == 3
        assert STUDIES.build("claim").params.k == 16
    finally:
        STUDIES.unregister("test_other_k")


def _documented_params() -> set[tuple[str, str]]:
    """``(study, key)`` of every ``study NAME ... --param KEY=`` the README and docs print."""
    found = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"\s+", " ", page.read_text())
        for name, rest in re.findall(r"\b(\w+) ((?:--[\w-]+ \S+ )*--param \w+=)", text):
            if name in STUDIES:
                found |= {(name, key) for key in re.findall(r"--param (\w+)=", rest)}
        found |= {(n, k) for n, k in re.findall(r"`(\w+) --param (\w+)=", text) if n in STUDIES}
    return found


def test_every_param_the_docs_print_is_still_accepted():
    documented = _documented_params()
    assert {("claim", "task"), ("claim", "ranking"), ("spec_curve", "cogqa")} <= documented
    for name, key in sorted(documented):
        assert key in option_kinds(STUDIES.get(name).Options), (name, key)
