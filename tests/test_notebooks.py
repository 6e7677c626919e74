"""Execute every notebook in notebooks/ (they are tested artefacts).

A notebook passes when every cell runs and none writes to stderr: a warning
(every warning is shown once in the kernel, ``PYTHONWARNINGS=default``) is a
defect of the tutorial, as it is in the documentation build (myst-nb's
``nb_output_stderr = "error"`` in docs/conf.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")
)


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONWARNINGS", "default")  # inherited by the kernel
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: outputs must be stripped"
    client = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    stderr = [
        f"cell {i}: {out.get('text', '')}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream" and out.get("name") == "stderr"
    ]
    assert not stderr, f"{path.name} wrote to stderr:\n" + "\n".join(stderr)
