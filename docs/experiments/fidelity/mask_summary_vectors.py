"""Writes tests/systems/vectors/mask_summary_docs.json by running M-ASK's own ``SummaryAgent._build_messages``.

Needs, in a scratch folder outside the repository (argument 1), ``summary_agent.py`` holding that method's body
(user message) cut from chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b qa_manager/base_agent.py as a
plain function ``_build_messages(data)``. Usage:
python docs/experiments/fidelity/mask_summary_vectors.py /tmp/ref/mask tests/systems/vectors/mask_summary_docs.json
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from summary_agent import _build_messages  # noqa: E402

CASES = [
    (
        "who wrote hamlet",
        ['"Hamlet"\nHamlet is a tragedy by William Shakespeare.', '"Shakespeare"\nAn English poet.'],
    ),
    ("capital of {x}", ['"Arvena"\nThe capital of Arvena is Lomir.\nSecond line.']),
    ("no title", ["A passage without a title line.", '"Only Title"\n', '"Q" \n  spaced  ']),
    ("nothing found", []),
]
cases = [
    {
        "query": query,
        "contents": contents,
        "user": _build_messages({"query": query, "docs": contents})[0]["content"],
    }
    for query, contents in CASES
]
source = (
    "chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b qa_manager/base_agent.py SummaryAgent._build_messages "
    "(user content) run on each case's query and docs (corpus contents strings, as its retrieval tool returns them); "
    "written by docs/experiments/fidelity/mask_summary_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
