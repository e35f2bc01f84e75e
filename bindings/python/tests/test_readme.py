"""The package README's example is examples/payments.py as it is, and runs as written."""

from __future__ import annotations

import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
EXAMPLE = PACKAGE / "examples" / "payments.py"


def test_the_readme_shows_the_example_as_it_is() -> None:
    readme = (PACKAGE / "README.md").read_text()
    assert f"```python\n{EXAMPLE.read_text()}```" in readme


def test_the_example_pays_once_after_the_approval_and_asks_its_second_question(tmp_path) -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        '{"amount":50,"to":"bob"}',
        "{'question': 'notify the payee?'}",
        "{'to': 'bob', 'amount': 50, 'status': 'paid 50 to bob', 'notify': 'yes'}",
    ]
