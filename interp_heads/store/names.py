"""Names that become file names or HTML ids: one function, :func:`safe_name`.

Task names come from users (a file's stem, a ``task`` field, a ranking table) and end up in paths
(``attribution/<task>.json``, ``figures/heatmap_<task>.html``) and in the report's element ids and
JavaScript. A name that is already a plain slug (letters, digits, ``_ . -``, not starting with a
dot, at most 64 characters) is kept as it is, so the built-in tasks' files keep their names; any
other name becomes a slug of its safe characters plus ``-h`` and 8 hex digits of its sha256. The
map is one-to-one: a kept name never ends like a hashed one (such names are hashed too).
"""

from __future__ import annotations

import hashlib
import re

_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")
_HASHED = re.compile(r"-h[0-9a-f]{8}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


def safe_name(name: str) -> str:
    """``name`` as a file-name and HTML-id safe slug (kept when it already is one).

    >>> safe_name("knowledge_recall")
    'knowledge_recall'
    >>> safe_name("/../x")
    'x-h04741feb'
    """
    name = str(name)
    if _PLAIN.match(name) and not _HASHED.search(name) and not name.endswith("."):
        return name
    slug = _UNSAFE.sub("_", name).strip("._-")[:40] or "name"
    return f"{slug}-h{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
