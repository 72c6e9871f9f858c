"""The marking the docs test reads: markers, commands, expected output."""

from __future__ import annotations

from pathlib import Path

from tests.support.docs import blocks
from tests.support.docs.blocks import Block, output_matches, parse, shell_commands, trailing_comment

DOC = """# Title

<!-- session: README.md -->

<!-- run -->
```sh
.venv/bin/liftlog standalone --data-dir ./d   # Ctrl-C stops everything
.venv/bin/liftlog publish s --key 'a # b' x   # prints s/<p> offset=0
# a comment line
.venv/bin/liftlog stream create s \\
    --subject s
```

<!-- needs: delta-spark jars from Maven -->
```python
spark.read.format("delta").load(uri)
```

<!-- run -->
```python
print("hi")
```

<!-- output -->
```text
hi
```

```text
liftlog stream create NAME [--partitions N]
```
"""


def _doc(tmp_path: Path, monkeypatch: object) -> blocks.Document:
    path = tmp_path / "docs" / "x.md"
    path.parent.mkdir()
    path.write_text(DOC)
    monkeypatch.setattr(blocks, "REPO", tmp_path)  # type: ignore[attr-defined]
    return parse(path)


def test_markers_and_session(tmp_path, monkeypatch):
    doc = _doc(tmp_path, monkeypatch)
    assert doc.session == "README.md"
    assert [(b.lang, b.marker) for b in doc.blocks] == [
        ("sh", "run"),
        ("python", "needs"),
        ("python", "run"),
        ("text", "output"),
        ("text", None),
    ]
    assert doc.blocks[1].reason == "delta-spark jars from Maven"
    assert doc.blocks[2].output == "hi\n"
    assert doc.blocks[0].where == "docs/x.md:6"


def test_shell_commands(tmp_path, monkeypatch):
    commands = shell_commands(_doc(tmp_path, monkeypatch).blocks[0])
    assert [c.background for c in commands] == [True, False, False]
    assert commands[1].expected == "s/<p> offset=0"
    assert commands[2].line == ".venv/bin/liftlog stream create s \\\n    --subject s"


def test_prompted_block_expects_whole_output():
    block = Block("d.md", 1, "sh", "$ echo a\na\n$ echo b\n...\n", "run")
    commands = shell_commands(block)
    assert [(c.line, c.expected, c.whole) for c in commands] == [
        ("echo a", "a\n", True),
        ("echo b", "...\n", True),
    ]


def test_trailing_comment_ignores_quoted_hashes():
    assert trailing_comment("""echo '# no' "# no" x#y  # yes""") == "yes"
    assert trailing_comment("echo 'a'") is None


def test_output_matching():
    assert output_matches("a <x> c\n...\nz", "a bb c\n1\n2\nz\n")
    assert output_matches("...\nz", "z")
    assert not output_matches("a <x> c", "a c")
    assert not output_matches("a\nb", "a\nb\nc")
