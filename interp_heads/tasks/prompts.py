"""Prompt formatting: chat template for instruct models, plain text for base models.

Task files store the task text (``prompt``); what the model actually sees is
``render(model, prompt)``: with ``fmt="auto"`` the tokenizer's chat template wraps it as one user
turn followed by the assistant header, when the tokenizer has a template; otherwise the text is
used as is (plain few-shot for base models). ``fmt="cognitive_mirrors"`` gives the Cognitive
Mirrors study's template, raw as the study feeds it (``tasks.cognitive_mirrors.wrap``: a prompt
already in the template is kept).
"""

from __future__ import annotations

from collections.abc import Sequence

from interp_heads.choices import PromptFormat
from interp_heads.errors import InputError

__all__ = ["PromptFormat", "has_chat_template", "render"]
DEFAULT_SYSTEM = "You are a concise assistant. Answer with the answer only."


def has_chat_template(model) -> bool:
    tok = getattr(model, "tokenizer", None)
    return bool(tok is not None and getattr(tok, "chat_template", None))


def render(
    model,
    prompts: str | Sequence[str],
    fmt: PromptFormat | str = "auto",
    system: str | None = DEFAULT_SYSTEM,
) -> list[str]:
    """The exact strings the model sees for task prompts (always a list).

    ``fmt`` is ``"auto"``, ``"chat"`` or ``"plain"`` (``PromptFormat``); anything else is refused.
    """
    fmt = PromptFormat.parse(fmt, "prompt format (fmt)")
    if isinstance(prompts, str):
        prompts = [prompts]
    if fmt == PromptFormat.COGNITIVE_MIRRORS:
        from interp_heads.tasks.cognitive_mirrors import wrap

        return [wrap(text) for text in prompts]
    use_chat = fmt == "chat" or (fmt == "auto" and has_chat_template(model))
    if not use_chat:
        return list(prompts)
    if not has_chat_template(model):
        raise InputError("fmt='chat' needs a tokenizer with a chat template")
    out = []
    for text in prompts:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": text})
        out.append(
            model.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        )
    return out
