#!/usr/bin/env python3
"""Re-runs every example in README.md and replaces its output block.

An example is a line `<!-- run: ARGS -->` followed by a fenced block; the block becomes the
output of `build/mlaplan ARGS` (or of $MLAPLAN, e.g. a copy of the binaries beside mlaplan-validate, so
the tree can be rebuilt while it runs). With --check, exits 1 when any block is out of date."""
import os
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
readme = root / "README.md"
binary = Path(os.environ.get("MLAPLAN", root / "build" / "mlaplan")).resolve()
text = readme.read_text()
pattern = re.compile(r"(<!-- run: (.*?) -->\n```[a-z]*\n)(.*?)(```\n)", re.S)


def run(match):
    args = match.group(2)
    out = subprocess.run([str(binary)] + args.split(), capture_output=True, text=True, cwd=root)
    body = out.stdout if out.returncode == 0 else out.stderr
    return match.group(1) + body + match.group(4)


new = pattern.sub(run, text)
if "--check" in sys.argv:
    sys.exit(0 if new == text else 1)
readme.write_text(new)
