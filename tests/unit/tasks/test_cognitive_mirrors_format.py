"""The Cognitive Mirrors prompt format: template, prior knowledge, JSON answers, the ``]`` stop."""

from __future__ import annotations

import json

import pytest

from interp_heads.generation.decode import generate_tokens, vocab_token_id
from interp_heads.tasks import cognitive_mirrors as cm
from interp_heads.tasks.prompts import render

PROMPT_LINES = [
    "",
    "",
    "You are an expert in analytical and logical reasoning. You will be given a main question and "
    "prior knowledge in chain-of-thought (CoT) format.",
    "Your task is to answer a follow-up subquestion using the information provided.",
    "",
    "Here is the main question:",
    "<main_question>",
    "How many rolls are left?",
    "</main_question>",
    "",
    "Here is the prior knowledge in chain-of-thought (CoT) format:",
    "<prior_knowledge>",
    "Q1: How many trays?",
    "A1: 4",
    "Q3: How many sold?",
    "A3: 2.5",
    "</prior_knowledge>",
    "",
    "Here is the subquestion:",
    "<subquestion>",
    "How many are left?",
    "</subquestion>",
    "",
    "Instructions:",
    "- Answer the subquestion carefully.",
    "- You can use the information in the prior_knowledge to help you answer the subquestion.",
    "- Your response should be clear and concise.",
    "- Stick to factual reasoning based on provided CoT.",
    "- Do not include any explanation, commentary, or code.",
    "- Do not output anything after the closing square bracket `]`.",
    "",
    "Only output your final answer using this format:",
    "[",
    '    {"answer": "<Your answer here>"}',
    "]",
    "",
    "Your answer:",
    "",
]


def test_prompt_as_the_study_writes_it():
    earlier = [
        ("How many trays?", 4, "Retrieval"),
        ("How many in total?", 48, "Math Calculation"),  # not Retrieval: left out, numbering kept
        ("How many sold?", 2.5, "Retrieval"),
    ]
    cot = cm.prior_knowledge(earlier, first=False)
    text = cm.study_prompt("How many rolls are left?", cot, "How many are left?")
    assert text == "\n".join(PROMPT_LINES)
    assert cm.prior_knowledge([], first=True) == "No prior knowledge."
    assert cm.prior_knowledge([("q", "a", "Inference")], first=False) == ""


def test_render_wraps_any_task_text_once(tiny):
    (wrapped,) = render(tiny, "The capital of France is", fmt="cognitive_mirrors")
    assert cm.is_study_prompt(wrapped) and wrapped.count("The capital of France is") == 2
    assert "No prior knowledge." in wrapped
    assert render(tiny, [wrapped], fmt="cognitive_mirrors") == [wrapped]  # already in it
    assert render(tiny, [wrapped], fmt="plain") == [wrapped]


@pytest.mark.parametrize(
    "generation, answer",
    [
        ('[\n    {"answer": "Paris"}\n]', "Paris"),
        ('First [{"answer": "Lyon"}] then [ {"answer": "Paris"} ]', "Paris"),  # the last block
        ('[{"answer": 42}]', "42"),  # repaired: an unquoted value is quoted
        ('[{"answer": Paris, France }]', "Paris, France"),
        ('[{"answer": null}]', "null"),
        ('[{"answer": 3.50}]', "3.50"),  # quoted before parsing: the text, not 3.5
        ('[{"answer":"Paris"}]', "Paris"),  # no space after the colon: parsed as is
        ('[{"answer": ""}]', ""),
        ("Paris, I think.", cm.PLACEHOLDER),  # no block: the prompt's own block is the last
        ('{"answer": "Paris"}', cm.PLACEHOLDER),  # a block needs its brackets
        ('[{"answer": "Par" "is"}]', None),  # does not parse even after the repair
        ('[{"Answer": "Paris"}]', None),  # no "answer" key
        ('[{"answer": "x", "why": 1}]', None),  # the repair swallows the rest: does not parse
        ('[{"answer":Paris}]', None),  # unquoted without the space: not repaired
    ],
)
def test_extract_answer(generation, answer):
    assert cm.extract_answer(generation) == answer


def test_joint_fallback_to_whole_texts():
    ok, broken = '[{"answer": "Paris"}]', '[{"answer": "Par" "is"}]'
    assert cm.study_answers(ok, '[{"answer": "Lyon"}]') == ("Paris", "Lyon")
    assert cm.study_answers(ok, broken) == (ok, broken)  # either has none: both whole
    assert cm.study_answers(broken, ok) == (broken, ok)
    assert cm.study_answers("no block", ok) == (cm.PLACEHOLDER, "Paris")
    assert cm.study_answers('[{"answer": " "}]', "") == ("N/A", cm.PLACEHOLDER)
    assert cm.study_answers(broken, "") == (broken, "N/A")
    assert cm.answer_text(ok) == "Paris" and cm.answer_text("Paris.") == "Paris."


def test_safe_json_parse_repairs_like_the_study():
    assert cm.safe_json_parse('[{"answer": 12 apples}]') == [{"answer": "12 apples"}]
    assert cm.safe_json_parse('[ {"answer": "a"} ]') == [{"answer": "a"}]
    with pytest.raises(json.JSONDecodeError):
        cm.safe_json_parse('[{"answer": "a" "b"}]')


def test_generation_stops_after_the_token_and_keeps_it(tiny):
    tok = tiny.tokenizer
    # stop at the token a row generates third: the row ends right after its first occurrence
    for prompt in ["The capital of France is", "1 2 3 4"]:
        (row,) = generate_tokens(tiny, [prompt], 12, stop_at_eos=False)
        text = tok.convert_ids_to_tokens(row[2])
        (stopped,) = generate_tokens(tiny, [prompt], 12, stop_at_eos=False, stop_after=text)
        assert stopped == row[: row.index(row[2]) + 1]
    assert vocab_token_id(tiny, "]") == tok.convert_tokens_to_ids("]")
    with pytest.raises(ValueError, match="no token"):
        vocab_token_id(tiny, "no such token here")
