"""bench/peers.py's BookSim (MCM artifact) and minimal-loop sections.

The artifact itself is not installed in CI: a stand-in of its layout (a run
script in its format and a ``src/simulate.py`` that writes a result file as
the artifact's does) checks that the script runs the run script's command with
its variables filled in and reads the cycles back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from script_module import load_script

import wafercoll as wc
from wafercoll.experiments.mcm_common import simulate_variant

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "peers.py"

#: A block of the artifact's run script (its format: one ``simulate.py`` call
#: per mesh, variables expanded by the runner); 16 chiplets and 25 chiplets.
RUN_SCRIPT = textwrap.dedent(
    """\
    #!/bin/bash
    syntheticDataSize=(262144 4194304)
    outdir=$SIMHOME/out
    for i in ${!syntheticDataSize[@]}; do
      python $SIMHOME/src/simulate.py \\
          --num-hmcs 25 \\
          --outdir $outdir \\
          --allreduce mesh_overlap_2d_1 \\
          --synthetic-data-size ${syntheticDataSize[$i]} \\
          > $outdir/err25.log 2>&1 &
      python $SIMHOME/src/simulate.py \\
          --num-hmcs 16 \\
          --outdir $outdir \\
          --allreduce mesh_overlap_2d_1 \\
          --booksim-config $SIMHOME/src/booksim2/runfiles/mesh/anynet_mesh_16_200.cfg \\
          --synthetic-data-size ${syntheticDataSize[$i]} \\
          > $outdir/err16.log 2>&1 &
    done
    """
)

#: The stand-in simulator: its "cycles" encode what it was given, so the
#: test can tell the command, the size and the environment apart.
FAKE_SIMULATE = textwrap.dedent(
    """\
    import json, os, sys
    from pathlib import Path
    a = sys.argv[1:]
    val = lambda k: a[a.index(k) + 1]
    assert val("--allreduce") == "mesh_overlap_2d_1"
    assert Path(val("--booksim-config")).parent.is_dir()
    assert os.environ["PYTHONHASHSEED"] == "0"
    assert Path.cwd().name == "src"
    cycles = int(val("--synthetic-data-size")) * 1000 + int(val("--num-hmcs"))
    out = Path(val("--outdir")) / "run" / "result.json"
    out.parent.mkdir(parents=True)
    result = {"results": {"performance": {"allreduce": {"total": cycles}}}}
    out.write_text(json.dumps(result))
    """
)


def load_peers() -> ModuleType:
    return load_script(SCRIPT, "bench_peers")


def fake_artifact(root: Path) -> Path:
    scripts = root / "utils" / "run_scripts" / "bw"
    scripts.mkdir(parents=True)
    (scripts / "mesh_overlap_2d_1_bw.sh").write_text(RUN_SCRIPT)
    (root / "src" / "booksim2" / "runfiles" / "mesh").mkdir(parents=True)
    (root / "src" / "simulate.py").write_text(FAKE_SIMULATE)
    return root


def test_booksim_tto_runs_the_run_scripts_command(tmp_path: Path) -> None:
    peers = load_peers()
    art = fake_artifact(tmp_path / "artifact")
    for mib in (1, 16):
        out = peers.booksim_tto(art, sys.executable, mib << 20, timeout=60)
        assert "error" not in out, out
        # The 16-chiplet block, the size in fp32 parameters.
        assert out["cycles"] == (mib << 20) // 4 * 1000 + 16
        assert out["process_s"] > 0 and out["peak_mib"] > 0


def test_booksim_tto_reports_a_failed_run(tmp_path: Path) -> None:
    peers = load_peers()
    art = fake_artifact(tmp_path / "artifact")
    (art / "src" / "simulate.py").write_text("raise SystemExit('no BookSim')\n")
    out = peers.booksim_tto(art, sys.executable, 1 << 20, timeout=60)
    assert "no BookSim" in out["error"]


def test_child_mcm_is_the_artifact_variant() -> None:
    peers = load_peers()
    out = peers.child_mcm(1 << 20)
    r = simulate_variant("TTO", 4, 4, 1 << 20)
    assert out["cycles"] == round(r.cycles) > 0
    # Not the paper's TTO under the paper's network: the variant is what runs.
    top = wc.topology.mesh(4, 4)
    s = wc.build("mesh_tto_allreduce", topology=top, size_bytes=1 << 20)
    assert round(wc.simulate(s, top, wc.mcm.TABLE_II).cycles) != out["cycles"]


def test_mcm_section_end_to_end(tmp_path: Path) -> None:
    art = fake_artifact(tmp_path / "artifact")
    rows = tmp_path / "rows.json"
    cmd = [sys.executable, str(SCRIPT), "--only-extra", "--mcm-artifact", str(art)]
    cmd += ["--mcm-sizes-mib", "1", "--json", str(rows)]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(rows.read_text(encoding="utf-8"))["mcm_tto"]
    assert row["booksim"]["cycles"] == (1 << 20) // 4 * 1000 + 16
    assert row["wafercoll"]["cycles"] == peers_cycles(1 << 20)
    assert "BookSim" in r.stdout and "faster" in r.stdout


def peers_cycles(size: int) -> int:
    return round(simulate_variant("TTO", 4, 4, size).cycles)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--only-extra"], "--only-extra needs"),
        (["--mcm-artifact", "/nonexistent"], "no src/simulate.py"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], message: str) -> None:
    r = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True
    )
    assert r.returncode == 2
    assert message in r.stderr
