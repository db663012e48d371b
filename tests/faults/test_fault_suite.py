"""The fault suite (issue 15 item 11): the real `turnstone-tui` against the scripted model server with
one injected fault per case — provider 429/500/401, stalls, cut streams, garbage SSE, kill -9 at points
of a turn, database faults, MCP crash/hang/garbage, hostile arguments — then ``--resume``.

Every case must recover (a clear message, never a traceback; the resumed session answers with a valid
request) and lose nothing: every message committed before the fault is still stored, unchanged and in
order, afterwards. bench/faults.py prints the same cases as a table (tried / recovered / lost).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.cases import CASES, Case

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault_is_survived_and_nothing_is_lost(case: Case, tmp_path: Path) -> None:
    outcome = case.run(tmp_path)
    assert outcome.recovered, outcome.detail
    assert outcome.lost == 0, f"{outcome.committed} committed, {outcome.present} present: {outcome.detail}"
    assert outcome.committed > 0  # the fault hit a session that had something to lose
