"""The comparison page as HTML (``studies.compare``): the interactive figure first, then the
same sections as docs/compare.md. Offline: plotly.js is loaded from ``plotly.min.js`` beside the
page. Every value goes through ``figures.escape`` (a run folder may have been edited by hand)."""

from __future__ import annotations

from pathlib import Path

from interp_heads.figures.escape import esc, esc_table
from interp_heads.report.html import CSS
from interp_heads.store import write_atomic

TITLE = "The study's protocol beside the causal one"


def html_page(path: Path, fig, sections: list[dict], runs: list[str]) -> list[Path]:
    """Write ``path`` (and ``plotly.min.js`` beside it when there is a figure); returns both."""
    parts = [f"<h1>{esc(TITLE)}</h1>"]
    written = []
    if fig is not None:
        from plotly.offline import get_plotlyjs

        js = path.parent / "plotly.min.js"
        write_atomic(js, get_plotlyjs().encode())
        written.append(js)
        parts.append(
            fig.to_html(
                full_html=False, include_plotlyjs=False, div_id="fig-protocols",
                default_width=f"{fig.layout.width}px", default_height=f"{fig.layout.height}px",
            )
        )  # fmt: skip
        parts.append(
            '<p class="note">Per protocol, four task panels: Accuracy blue, COMET (or its '
            "labelled MiniLM stand-in) red; TopK solid, RandomK dashed, LowK dotted; thin line: "
            "unmasked. Hover a point for its 95% interval and counts.</p>"
        )
    else:
        parts.append('<p class="note">No figure: neither protocol has been run.</p>')
    for sec in sections:
        parts += [f"<h2>{esc(sec['title'])}</h2>", f'<p class="note">{esc(sec["note"])}</p>']
        if "table" in sec:
            parts.append(esc_table(sec["table"].round(3)))
        if sec.get("items"):
            parts.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in sec["items"]) + "</ul>")
    parts += ["<h2>Runs</h2>", "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in runs) + "</ul>"]
    head = "<script type='text/javascript' src='plotly.min.js'></script>" if fig else ""
    doc = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{esc(TITLE)}</title><style>{CSS}</style>{head}</head><body>"
        + "\n".join(parts)
        + "</body></html>"
    )
    write_atomic(path, doc)
    return [*written, path]
