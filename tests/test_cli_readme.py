"""The README's two commands are the ones CI runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_starts_with_two_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    cmds = [c for c in block.splitlines() if c.strip() and not c.startswith("#")]
    assert len(cmds) == 2
    assert "pip install" in cmds[0] and "planner" in cmds[0]
    assert "pytest" in cmds[1]
