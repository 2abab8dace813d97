"""The placeholders a page leaves for the docs hook to fill in with the site's addresses.

Each build spells them with a token of its own, drawn when this module is first imported and passed to the
notebook kernels in the environment, so that no results file can spell one. Escaping data is not enough:
the notebook conversion turns character references back into characters, so a model named
'__PAGE_URL__' (written '&#95;&#95;PAGE_URL&#95;&#95;') would reach the hook as the placeholder.
"""

from __future__ import annotations

import os
import re
import secrets

TOKEN_ENV = "BATCHING_PLACEHOLDER_TOKEN"


def _token() -> str:
    token = os.environ.get(TOKEN_ENV, "")
    if not re.fullmatch(r"[0-9a-f]{16}", token):
        token = secrets.token_hex(8)
        os.environ[TOKEN_ENV] = token  # the kernels the build starts inherit it
    return token


TOKEN = _token()
SITE_ROOT = f"__SITE_ROOT_{TOKEN}__/"  # the page's relative path to the site root, e.g. ../
SITE_URL = f"__SITE_URL_{TOKEN}__/"  # the site's root, e.g. https://example.org/batching/
PAGE_URL = f"__PAGE_URL_{TOKEN}__"  # the page holding the chart, e.g. https://example.org/batching/mlp/
UNPUBLISHED = f"<!--__UNPUBLISHED_{TOKEN}__-->"  # where a build without SITE_URL says its addresses are local
