"""docs/liftbridge.md's snippets, run as written against real nodes: the gufo-liftbridge
example in gufo-liftbridge's own environment against a node, with its documented output.
(The TLS example is run by test_security.py against the secured stack.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from liftlog.embedded.node import NodeProcess
from tests.support.client_scripts import script_env
from tests.support.client_venvs import GUFO_LIFTBRIDGE, venv_python
from tests.support.docs.blocks import REPO, Block, output_matches, parse
from tests.support.stacks import plain_stack_only

pytestmark = plain_stack_only("gufo-liftbridge opens plaintext channels only")

DOC = REPO / "docs" / "liftbridge.md"
DOCUMENTED_ADDRESS = "127.0.0.1:9292"
SNIPPET_TIMEOUT_S = 60


def python_blocks() -> list[Block]:
    return [b for b in parse(DOC).blocks if b.lang == "python"]


def output_after(block: Block) -> str:
    """The ``<!-- output -->`` block that follows ``block`` in the document."""
    blocks = parse(DOC).blocks
    following = blocks[blocks.index(block) + 1]
    assert following.marker == "output", f"{block.where} has no output block after it"
    return following.text


def test_the_gufo_example_prints_what_the_docs_show(node: NodeProcess, tmp_path: Path) -> None:
    block = python_blocks()[0]
    assert "gufo.liftbridge" in block.text and DOCUMENTED_ADDRESS in block.text
    script = tmp_path / "example.py"
    script.write_text(
        block.text.replace(DOCUMENTED_ADDRESS, node.config.advertised_liftbridge_address)
    )
    done = subprocess.run(
        [str(venv_python(GUFO_LIFTBRIDGE)), str(script)],
        env=script_env(GUFO_LIFTBRIDGE),
        capture_output=True,
        text=True,
        timeout=SNIPPET_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert output_matches(output_after(block), done.stdout), done.stdout
